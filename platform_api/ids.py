"""Sortable unique ids: a prefix, 48 bits of milliseconds, 80 random bits (base32)."""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last = (0, 0)


def _b32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A new id such as ``acct_01jc...``; ids of one prefix sort by creation time.

    Within one process, ids made in the same millisecond keep their creation order too (the
    random part counts up, as in monotonic ULIDs).
    """
    global _last
    millis = time.time_ns() // 1_000_000
    with _lock:
        last_millis, last_random = _last
        if millis <= last_millis and last_random + 1 < 1 << _RANDOM_BITS:
            millis, randomness = last_millis, last_random + 1
        else:
            randomness = int.from_bytes(os.urandom(_RANDOM_BITS // 8), "big")
        _last = (millis, randomness)
    return f"{prefix}_{_b32(millis, 10)}{_b32(randomness, 16)}"
