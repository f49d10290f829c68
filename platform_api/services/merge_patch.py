"""JSON merge-patch semantics for the objects users update piecewise (context, overrides)."""

from __future__ import annotations

from typing import Any


def merge_patch(stored: dict[str, Any] | None, changes: dict[str, Any]) -> dict[str, Any]:
    """``stored`` with ``changes`` applied: a value replaces, ``null`` removes the key."""
    merged = dict(stored or {})
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged
