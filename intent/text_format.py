"""How a message and its conversation history become model input.

Training and serving both call these functions, so the model sees at serving time exactly
what it saw in training. Pure Python: no torch, no tokenizer import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# One model input: the message, and the rendered history or None.
TextPair = tuple[str, str | None]

# Token budget of the model input; the message comes first, history fills what is left.
MAX_LENGTH = 128
# History is cut by characters before tokenizing so a long thread never crowds out the message.
HISTORY_CHAR_BUDGET = 400
ROLE_MARKERS = {"customer": "customer:", "agent": "agent:"}


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
