"""How a message and its conversation history become model input.

Training and serving both call these functions, so the model sees at serving time exactly
what it saw in training. Pure Python: no torch, no tokenizer import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import emoji

# One model input: the message, and the rendered history or None.
TextPair = tuple[str, str | None]

# Token budget of the model input; the message comes first, history fills what is left.
MAX_LENGTH = 128
# History is cut by characters before tokenizing so a long thread never crowds out the message.
HISTORY_CHAR_BUDGET = 400
ROLE_MARKERS = {"customer": "customer:", "agent": "agent:"}
# How a model's input spells emoji (its card's ``input.emoji``): "unk" leaves them to the
# tokenizer, whose vocabulary has none (every emoji becomes [UNK]); "names" writes each one as
# its English name first ("⭐⭐" -> "star star"), so a rating or a reaction reaches the model.
EMOJI_AS_UNK = "unk"
EMOJI_AS_NAMES = "names"
_SKIN_TONE = re.compile(r"_(?:medium-)?(?:light|medium|dark)_skin_tone")
# A cheap test before the full scan: the characters that can start an emoji (keycaps start
# with an ASCII digit, so their combining keycap mark stands in for them).
_EMOJI_STARTS = frozenset(e[0] for e in emoji.EMOJI_DATA if not e[0].isascii()) | {"\u20e3"}


def format_history(history: Iterable[Mapping[str, str]] | None) -> str | None:
    """Render prior turns most recent first with role markers, cut to the character budget."""
    if not history:
        return None
    parts: list[str] = []
    used = 0
    for turn in reversed(list(history)):
        marker = ROLE_MARKERS.get(str(turn.get("role", "")).lower(), "customer:")
        text = " ".join(str(turn.get("text", "")).split())
        piece = f"{marker} {text}"
        if used + len(piece) > HISTORY_CHAR_BUDGET:
            remaining = HISTORY_CHAR_BUDGET - used
            if remaining > len(marker) + 8:
                parts.append(piece[:remaining])
            break
        parts.append(piece)
        used += len(piece) + 3
    return " | ".join(parts) if parts else None


def format_input(
    message: str, history: Iterable[Mapping[str, str]] | None = None
) -> tuple[str, str | None]:
    """The (first, second) text pair the tokenizer encodes: the message, then the history."""
    return " ".join(message.split()), format_history(history)


def _emoji_name(chars: str, data: dict[str, Any]) -> str:
    name = _SKIN_TONE.sub("", data["en"].strip(":"))
    return f" {name.replace('_', ' ')} "


def spell_out_emoji(text: str) -> str:
    """Every emoji replaced by its English name, spaces collapsed; plain ASCII unchanged."""
    if text.isascii() or _EMOJI_STARTS.isdisjoint(text):
        return text
    return " ".join(emoji.replace_emoji(text, replace=_emoji_name).split())


def spell_pair(pair: tuple[str, str | None], emoji_style: str) -> tuple[str, str | None]:
    """A formatted pair as the model reads it under its card's emoji style."""
    if emoji_style != EMOJI_AS_NAMES:
        return pair
    first, second = pair
    return spell_out_emoji(first), spell_out_emoji(second) if second else second
