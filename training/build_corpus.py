"""Build the project's own corpus ``training/data/corpus.jsonl`` from the YAML templates.

The templates live in ``training/data/templates/``: one file per label (single messages and
multi-turn scenarios) and ``values.yaml`` (slot values and styling material). Each single
message becomes ``SINGLE_VARIANTS`` rows: the text as written, then one styling step per row
(chat styling, email, long email, mood, greeting, short form or ALL CAPS); some rows get a
neutral opener, or another topic's finished conversation, as history (the explicit message
wins). Each scenario becomes ``MULTI_VARIANTS`` rows with chat styling on the final message.
``options.yaml`` adds option picks: an agent offers two things of two labels, in random order,
and the customer answers by position ("the second one"), ``OPTION_VARIANTS`` rows per frame.
Every row keeps the id of its template (``group``) so that splits never put two variants of
one template on different sides. Deterministic for a given seed.

    python -m training.build_corpus --out training/data/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from training.labels import LABELS

TEMPLATES_DIR = Path(__file__).parent / "data" / "templates"
DEFAULT_OUT = Path(__file__).parent / "data" / "corpus.jsonl"
SINGLE_VARIANTS = 7
MULTI_VARIANTS = 10
OPTION_VARIANTS = 40
MAX_HISTORY_TURNS = 10
LONG_EMAIL_CHARS = 500
ROLES = ("agent", "customer")
# Filled by the generator; every other slot comes from values.yaml.
GENERATED_SLOTS = ("order", "product2", "address2")
# How often each styling step is picked for a styled (not the first) variant of a message.
STYLE_SHARES = {
    "chat": 0.45,
    "email": 0.16,
    "mood": 0.12,
    "short_form": 0.08,
    "greeting": 0.07,
    "long_email": 0.07,
    "all_caps": 0.05,
}

Turn = tuple[str, str]  # (role, text)


@dataclass(frozen=True)
class Styling:
    """Styling material of ``values.yaml`` (its header explains each list)."""

    greetings: list[str]
    email_context: list[str]
    closings: list[str]
    moods_angry: list[str]
    moods_polite: list[str]
    openers: list[list[Turn]]
    wrap_ups: list[str]
    slang: list[tuple[str, str]]
    emoji: list[str]
    endings: list[str]
    long_context: list[str]
    short_form_drop: list[str]


@dataclass(frozen=True)
class Templates:
    """Everything read from ``training/data/templates/``."""

    single: dict[str, list[str]]
    scenarios: dict[str, list[list[Turn]]]  # the last turn is the labelled customer message
    slots: dict[str, list[str]]
    styling: Styling
    option_frames: list[str]  # an agent offering {a} or {b}
    offers: dict[str, list[str]]  # per label, what the agent may offer


# --- loading --------------------------------------------------------------------------------


def _strings(value: Any, where: str) -> list[str]:
    # YAML reads unquoted yes/no/1 as booleans and numbers: insist on strings.
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{where}: expected a list of strings (quote yes, no and numbers)")
    return value


def _turns(value: Any, where: str) -> list[Turn]:
    turns: list[Turn] = []
    for turn in value:
        if not (isinstance(turn, dict) and len(turn) == 1):
            raise ValueError(f"{where}: a turn is one 'agent: text' or 'customer: text'")
        ((role, text),) = turn.items()
        if role not in ROLES or not isinstance(text, str):
            raise ValueError(f"{where}: bad turn {turn!r}")
        turns.append((role, text))
    return turns


def _read(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return data


def load_templates(directory: Path = TEMPLATES_DIR) -> Templates:
    """Read one YAML file per label plus ``values.yaml``."""
    single: dict[str, list[str]] = {}
    scenarios: dict[str, list[list[Turn]]] = {}
    for label in LABELS:
        path = directory / f"{label}.yaml"
        data = _read(path)
        single[label] = _strings(data["single"], f"{path}: single")
        scenarios[label] = [
            _turns(s, f"{path}: scenario {i}") for i, s in enumerate(data["scenarios"])
        ]
    path = directory / "values.yaml"
    values = _read(path)
    slots = {name: _strings(v, f"{path}: slots.{name}") for name, v in values["slots"].items()}
    lists = {
        key: _strings(values[key], f"{path}: {key}")
        for key in (
            "greetings",
            "email_context",
            "closings",
            "wrap_ups",
            "emoji",
            "endings",
            "long_context",
            "short_form_drop",
        )
    }
    styling = Styling(
        **lists,
        moods_angry=_strings(values["moods"]["angry"], f"{path}: moods.angry"),
        moods_polite=_strings(values["moods"]["polite"], f"{path}: moods.polite"),
        openers=[_turns(o, f"{path}: openers") for o in values["openers"]],
        slang=[(pattern, repl) for pattern, repl in values["slang"]],
    )
    path = directory / "options.yaml"
    options = _read(path)
    offers = {
        label: _strings(v, f"{path}: offers.{label}") for label, v in options["offers"].items()
    }
    if unknown := set(offers) - set(LABELS):
        raise ValueError(f"{path}: offers for unknown labels {sorted(unknown)}")
    return Templates(
        single=single,
        scenarios=scenarios,
        slots=slots,
        styling=styling,
        option_frames=_strings(options["frames"], f"{path}: frames"),
        offers=offers,
    )


# --- slots ----------------------------------------------------------------------------------


def slot_names(template: str) -> set[str]:
    """The ``{slot}`` names a template uses."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def order_number(rng: random.Random) -> str:
    """An order number in one of six formats."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([5, 6, 8, 10])))
    style = rng.randrange(6)
    if style == 0:
        return f"#{digits}"
    if style == 1:
        return f"ORD-{digits[:6]}"
    if style == 2:
        return f"{digits[:3]}-{digits[3:]}"
    if style == 3:
        return f"no. {digits}"
    if style == 4:
        return f"#{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{digits[:7]}"
    return digits


def draw_slots(values: dict[str, list[str]], rng: random.Random) -> dict[str, str]:
    """One value per slot, plus the generated ones."""
    slots = {name: rng.choice(options) for name, options in values.items()}
    slots["product2"] = rng.choice([p for p in values["product"] if p != slots["product"]])
    slots["address2"] = rng.choice([a for a in values["address"] if a != slots["address"]])
    slots["order"] = order_number(rng)
    return slots


def fill(template: str, slots: dict[str, str]) -> str:
    """The template with its slots filled."""
    return template.format_map(slots)


# --- styling steps --------------------------------------------------------------------------


def lower_case(text: str) -> str:
    return text.lower()


def drop_punctuation(text: str) -> str:
    # Apostrophes anywhere, other marks only at a word's end: "19.99" and emails stay whole.
    return re.sub(r"'|[.,!?;:]+(?=\s|$)", "", text)


def use_slang(text: str, rng: random.Random, slang: list[tuple[str, str]]) -> str:
    for pattern, repl in slang:
        if rng.random() < 0.7:
            text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


def add_typos(text: str, rng: random.Random, n: int) -> str:
    """Swap, drop or double a letter in ``n`` words (not in numbers or email addresses)."""
    words = text.split(" ")
    for _ in range(n):
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) < 4 or any(ch.isdigit() or ch == "@" for ch in w):
            continue
        j = rng.randrange(1, len(w) - 1)
        op = rng.randrange(3)
        if op == 0:
            w = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
        elif op == 1:
            w = w[:j] + w[j + 1 :]
        else:
            w = w[:j] + w[j] + w[j:]
        words[i] = w
    return " ".join(words)


def all_caps(text: str) -> str:
    return text.upper()


def add_emoji(text: str, rng: random.Random, emoji: list[str]) -> str:
    """Append an emoji, or insert it between two words."""
    words = text.split(" ")
    if rng.random() < 0.6 or len(words) < 3:
        return f"{text} {rng.choice(emoji)}"
    words.insert(rng.randrange(1, len(words)), rng.choice(emoji))
    return " ".join(words)


def add_ending(text: str, rng: random.Random, endings: list[str]) -> str:
    return text.rstrip(".") + rng.choice(endings)


def short_form(text: str, drops: list[str]) -> str:
    """Leading greetings and politeness removed, lower case, no final punctuation."""
    short = text
    while True:
        shorter = short
        for pattern in drops:
            shorter = re.sub(pattern, "", shorter, flags=re.IGNORECASE)
        if shorter == short:
            break
        short = shorter
    short = re.sub(r"[.!?]+$", "", short.strip()).lower()
    return short or text.lower()


def add_mood(text: str, rng: random.Random, moods: list[str]) -> str:
    mood = rng.choice(moods)
    return f"{mood} {text}" if rng.random() < 0.5 else f"{text} {mood}"


def add_greeting(text: str, rng: random.Random, greetings: list[str]) -> str:
    return f"{rng.choice(greetings)} {text}"


def email(
    core: str, rng: random.Random, styling: Styling, slots: dict[str, str], moods: list[str]
) -> str:
    """Greeting, maybe a context sentence and a mood, the message, closing."""
    parts = [rng.choice(styling.greetings)]
    if rng.random() < 0.7:
        parts.append(fill(rng.choice(styling.email_context), slots))
    if rng.random() < 0.3:
        parts.append(rng.choice(moods))
    parts += [core, fill(rng.choice(styling.closings), slots)]
    return rng.choice(["\n\n", "\n", " "]).join(parts)


def long_email(core: str, rng: random.Random, styling: Styling, slots: dict[str, str]) -> str:
    """An email of ``LONG_EMAIL_CHARS``+ characters, the ask inside irrelevant paragraphs."""
    paragraphs = rng.sample(styling.long_context, len(styling.long_context))
    closing = fill(rng.choice(styling.closings), slots)
    # One paragraph before the ask, the rest after it: the model reads the first 128 tokens.
    parts = [rng.choice(styling.greetings), paragraphs.pop(), core]
    while len("\n\n".join([*parts, closing])) < LONG_EMAIL_CHARS:
        parts.append(paragraphs.pop())
    return "\n\n".join([*parts, closing])


def chat_style(text: str, rng: random.Random, styling: Styling) -> str:
    """A random mix of lower case, no punctuation, slang, typos, emoji, endings, shouting."""
    if rng.random() < 0.25:
        text = lower_case(text)
    if rng.random() < 0.25:
        text = drop_punctuation(text)
    if rng.random() < 0.3:
        text = use_slang(text, rng, styling.slang)
    if rng.random() < 0.35:
        text = add_typos(text, rng, rng.randint(1, 2))
    if rng.random() < 0.06:
        text = all_caps(text)
    if rng.random() < 0.15:
        text = add_emoji(text, rng, styling.emoji)
    elif rng.random() < 0.15:
        text = add_ending(text, rng, styling.endings)
    return text


def style_single(
    core: str, rng: random.Random, styling: Styling, slots: dict[str, str], moods: list[str]
) -> str:
    """One styling step, picked by ``STYLE_SHARES``, applied to a single message."""
    step = rng.choices(list(STYLE_SHARES), weights=list(STYLE_SHARES.values()))[0]
    if step == "email":
        return email(core, rng, styling, slots, moods)
    if step == "long_email":
        return long_email(core, rng, styling, slots)
    if step == "mood":
        return add_mood(core, rng, moods)
    if step == "greeting":
        return add_greeting(core, rng, styling.greetings)
    if step == "short_form":
        return short_form(core, styling.short_form_drop)
    if step == "all_caps":
        return all_caps(core)
    return chat_style(core, rng, styling)


# --- rows -----------------------------------------------------------------------------------


def _history(turns: list[Turn], slots: dict[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "text": fill(text, slots)} for role, text in turns]


def _single_history(label: str, rng: random.Random, templates: Templates) -> list[Turn]:
    r = rng.random()
    if r < 0.12:
        return rng.choice(templates.styling.openers)
    if r < 0.2:
        # Another topic's finished conversation before an explicit message: the message wins.
        other = rng.choice([lab for lab in LABELS if lab != label])
        finished = [*rng.choice(templates.scenarios[other])]
        finished.append(("agent", rng.choice(templates.styling.wrap_ups)))
        return finished[-MAX_HISTORY_TURNS:]
    return []


def _single_rows(label: str, templates: Templates, rng: random.Random) -> Iterator[dict[str, Any]]:
    styling = templates.styling
    # Anger around praise would teach exactly the compliment/complaint confusion.
    angry = [] if label == "compliment" else styling.moods_angry
    moods = angry + styling.moods_polite
    for i, template in enumerate(templates.single[label]):
        for v in range(SINGLE_VARIANTS):
            slots = draw_slots(templates.slots, rng)
            core = fill(template, slots)
            message = core if v == 0 else style_single(core, rng, styling, slots, moods)
            history = _history(_single_history(label, rng, templates), slots)
            yield _row(message, history, label, f"corpus:{label}:s{i}")


def _scenario_rows(
    label: str, templates: Templates, rng: random.Random
) -> Iterator[dict[str, Any]]:
    for i, scenario in enumerate(templates.scenarios[label]):
        *turns, (_, final) = scenario
        for v in range(MULTI_VARIANTS):
            slots = draw_slots(templates.slots, rng)
            history = turns
            if v % 3 == 2:
                opener = rng.choice(templates.styling.openers)
                if len(opener) + len(turns) <= MAX_HISTORY_TURNS:
                    history = [*opener, *turns]
            message = fill(final, slots)
            if v > 0:
                message = chat_style(message, rng, templates.styling)
            yield _row(message, _history(history, slots), label, f"corpus:{label}:m{i}")


def _option_rows(templates: Templates, rng: random.Random) -> Iterator[dict[str, Any]]:
    """Each frame with two offers of different labels; the customer picks one by position."""
    labels = sorted(templates.offers)
    for i, frame in enumerate(templates.option_frames):
        for v in range(OPTION_VARIANTS):
            slots = draw_slots(templates.slots, rng)
            first, second = rng.sample(labels, 2)
            offer_a = fill(rng.choice(templates.offers[first]), slots)
            offer_b = fill(rng.choice(templates.offers[second]), slots)
            turns: list[Turn] = [("agent", frame.format(a=offer_a, b=offer_b))]
            if v % 3 == 2:
                turns = [*rng.choice(templates.styling.openers), *turns]
            picks_first = v % 2 == 0
            label = first if picks_first else second
            message = slots["pick_first"] if picks_first else slots["pick_second"]
            if v > 1:
                message = chat_style(message, rng, templates.styling)
            yield _row(message, _history(turns, slots), label, f"corpus:options:f{i}")


def _row(message: str, history: list[dict[str, str]], label: str, group: str) -> dict[str, Any]:
    return {"message": message, "conversation_history": history, "label": label, "group": group}


def build(seed: int = 13, templates: Templates | None = None) -> list[dict[str, Any]]:
    """Expand every template into its variants; rows carry message, history, label, group."""
    templates = templates or load_templates()
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    generated = [
        row
        for label in LABELS
        for row in [*_single_rows(label, templates, rng), *_scenario_rows(label, templates, rng)]
    ]
    for row in [*generated, *_option_rows(templates, rng)]:
        key = (row["message"].lower(), json.dumps(row["conversation_history"]))
        if key not in seen:
            seen.add(key)
            rows.append(row)
    rng.shuffle(rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSONL file to write")
    parser.add_argument("--seed", type=int, default=13, help="random seed of the expansion")
    args = parser.parse_args()
    rows = build(args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
