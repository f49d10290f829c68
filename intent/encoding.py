"""Turn (message, history) pairs into model inputs with the fast ``tokenizers`` library.

Training, evaluation and serving share this function and ``text_format`` so the model sees
the same input everywhere. The message is the first segment and the formatted history the
second; truncation trims the longer segment first, so a long history never hides the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from intent.text_format import EMOJI_AS_NAMES, MAX_LENGTH, format_input, spell_pair


def load_tokenizer(model_dir: Path | str, max_length: int = MAX_LENGTH) -> Tokenizer:
    """Load ``tokenizer.json`` from a model directory, set to truncate and pad per batch."""
    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length, strategy="longest_first")
    pad_token = "[PAD]" if tokenizer.token_to_id("[PAD]") is not None else "<pad>"
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad_token) or 0, pad_token=pad_token)
    return tokenizer


def encode(
    tokenizer: Tokenizer,
    messages: Sequence[str],
    histories: Sequence[Sequence[Mapping[str, str]] | None] | None = None,
    *,
    emoji_style: str = EMOJI_AS_NAMES,
) -> dict[str, np.ndarray]:
    """``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64, batch x length).

    ``emoji_style`` is the model card's ``input.emoji`` (see ``text_format``)."""
    histories = histories if histories is not None else [None] * len(messages)
    inputs: list[str | tuple[str, str]] = []
    for message, history in zip(messages, histories, strict=True):
        first, second = spell_pair(format_input(message, history), emoji_style)
        inputs.append((first, second) if second else first)
    encodings = tokenizer.encode_batch(inputs)
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
