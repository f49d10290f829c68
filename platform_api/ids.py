"""Sortable unique ids: a prefix, 48 bits of milliseconds, 80 random bits (base32)."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def _b32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A new id such as ``acct_01jc...``; ids of one prefix sort by creation time."""
    millis = time.time_ns() // 1_000_000
    randomness = int.from_bytes(os.urandom(10), "big")
    return f"{prefix}_{_b32(millis, 10)}{_b32(randomness, 16)}"
