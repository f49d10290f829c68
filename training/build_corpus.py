"""Build the project's own corpus ``training/data/corpus.jsonl`` from ``corpus_templates``.

Each hand-written template is expanded into several variants: slots filled with varied
products, order numbers and addresses; chat styles (lower case, no punctuation, slang,
typos) or email styles (greeting, context sentence, closing, signature); moods (angry,
polite); and conversation histories (neutral openers, or another topic's history before an
explicit message). Every row keeps the id of its template (``group``) so that splits never
put two variants of one template on different sides. Deterministic for a given seed.

    python -m training.build_corpus --out training/data/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

from training import corpus_templates as T

DEFAULT_OUT = Path(__file__).parent / "data" / "corpus.jsonl"
SINGLE_VARIANTS = 7
MULTI_VARIANTS = 10

NEUTRAL_OPENERS = [
    [("agent", "Hi! How can I help you today?")],
    [("agent", "Hello, thanks for contacting us. What can I do for you?")],
    [("customer", "hello"), ("agent", "Hi there! How can I help?")],
    [("agent", "Welcome to support. Please describe your issue.")],
    [("customer", "hi is anyone there"), ("agent", "Yes, I'm here. How can I help?")],
]

SLANG = [
    (r"\byou\b", "u"),
    (r"\bplease\b", "pls"),
    (r"\bthanks\b", "thx"),
    (r"\bare\b", "r"),
    (r"\bbecause\b", "cuz"),
    (r"\bwant to\b", "wanna"),
    (r"\bgoing to\b", "gonna"),
    (r"\bI don't know\b", "idk"),
    (r"\bright now\b", "rn"),
    (r"\byour\b", "ur"),
]


def _order_number(rng: random.Random) -> str:
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


def _slots(rng: random.Random) -> dict[str, str]:
    values = {key: rng.choice(options) for key, options in T.VALUES.items()}
    values["product2"] = rng.choice(T.VALUES["product"])
    values["address2"] = rng.choice(T.VALUES["address"])
    values["order"] = _order_number(rng)
    values["days"] = str(rng.choice([2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 20, 30]))
    values["amount"] = rng.choice(["$", "£", "€", ""]) + str(
        rng.choice([12, 19.99, 35, 49.5, 89, 120, 240, 560])
    )
    months = ["Jan", "March", "May", "June", "Sept", "October", "Nov", "December"]
    values["date"] = rng.choice(
        [
            "Monday",
            "Friday",
            "last week",
            "yesterday",
            f"{rng.randint(1, 28)} {rng.choice(months)}",
            f"{rng.randint(1, 12)}/{rng.randint(1, 28)}",
            "the weekend",
        ]
    )
    return values


def _fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _typos(text: str, rng: random.Random, n: int) -> str:
    words = text.split(" ")
    for _ in range(n):
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) < 4 or any(ch.isdigit() for ch in w):
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


def _chat_style(text: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.25:
        text = text.lower()
    if rng.random() < 0.25:
        text = re.sub(r"[.,!?;:']", "", text)
    if rng.random() < 0.3:
        for pattern, repl in SLANG:
            if rng.random() < 0.7:
                text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    if rng.random() < 0.35:
        text = _typos(text, rng, rng.randint(1, 2))
    if rng.random() < 0.08:
        text = text.upper()
    if rng.random() < 0.15:
        text = text.rstrip(".") + rng.choice(["!!", "??", " ...", " :(", " :)", "!!!"])
    return text


def _email_style(core: str, rng: random.Random, slots: dict[str, str]) -> str:
    parts = [rng.choice(T.GREETINGS)]
    if rng.random() < 0.7:
        parts.append(_fill(rng.choice(T.EMAIL_CONTEXT), slots))
    if rng.random() < 0.3:
        parts.append(rng.choice(T.MOODS_ANGRY + T.MOODS_POLITE))
    parts.append(core)
    parts.append(_fill(rng.choice(T.CLOSINGS), slots))
    sep = rng.choice(["\n\n", "\n", " "])
    return sep.join(parts)


def _variant(core: str, rng: random.Random, slots: dict[str, str]) -> str:
    r = rng.random()
    if r < 0.25:
        return _email_style(core, rng, slots)
    if r < 0.4:
        mood = rng.choice(T.MOODS_ANGRY + T.MOODS_POLITE)
        return f"{mood} {core}" if rng.random() < 0.5 else f"{core} {mood}"
    if r < 0.5:
        return f"{rng.choice(T.GREETINGS)} {core}"
    return _chat_style(core, rng)


def _history(turns: list[tuple[str, str]], slots: dict[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "text": _fill(text, slots)} for role, text in turns]


def build(seed: int = 13) -> list[dict[str, Any]]:
    """Expand every template into its variants; rows carry message, history, label, group."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    labels = list(T.SINGLE)

    def add(row: dict[str, Any]) -> None:
        key = (row["message"].lower(), json.dumps(row["conversation_history"]))
        if key not in seen:
            seen.add(key)
            rows.append(row)

    for label in labels:
        for t_idx, template in enumerate(T.SINGLE[label]):
            group = f"corpus:{label}:s{t_idx}"
            for v in range(SINGLE_VARIANTS):
                slots = _slots(rng)
                core = _fill(template, slots)
                message = core if v == 0 else _variant(core, rng, slots)
                history: list[dict[str, str]] = []
                r = rng.random()
                if r < 0.12:
                    history = _history(rng.choice(NEUTRAL_OPENERS), slots)
                elif r < 0.2:
                    # Another topic's history before an explicit message: the message wins.
                    other = rng.choice([lab for lab in labels if lab != label])
                    turns, _ = rng.choice(T.MULTI[other])
                    history = _history(turns, slots)
                add(
                    {
                        "message": message,
                        "conversation_history": history,
                        "label": label,
                        "group": group,
                    }
                )
        for m_idx, (turns, final) in enumerate(T.MULTI[label]):
            group = f"corpus:{label}:m{m_idx}"
            for v in range(MULTI_VARIANTS):
                slots = _slots(rng)
                history = _history(turns, slots)
                if v % 3 == 2:
                    history = _history(rng.choice(NEUTRAL_OPENERS), slots) + history
                message = _fill(final, slots)
                if v > 0:
                    message = _chat_style(message, rng)
                add(
                    {
                        "message": message,
                        "conversation_history": history,
                        "label": label,
                        "group": group,
                    }
                )
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
