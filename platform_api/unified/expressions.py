"""JSONata expressions as the manifests use them: compiled once, evaluated with bindings."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

import jsonata

from core.errors import ApiError

# jsonata-python keeps evaluation state on the compiled object; one lock per expression keeps
# concurrent requests (thread-pool routes, the proxy) from sharing that state mid-evaluation.
_LOCKS: dict[int, threading.Lock] = {}


class ExpressionError(ValueError):
    """A manifest expression does not compile."""


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> jsonata.Jsonata:
    """The compiled form of ``source``; raises ExpressionError when it is not valid JSONata."""
    try:
        expression = jsonata.Jsonata(source)
    except Exception as exc:  # jsonata raises its own JException
        raise ExpressionError(f"{exc} in expression: {source.strip()[:120]}") from exc
    # Inputs are parsed JSON (valid by construction); jsonata-python would otherwise walk the
    # whole document on every evaluation, which costs more than most mappings themselves.
    expression.set_validate_input(False)
    _LOCKS[id(expression)] = threading.Lock()
    return expression


def evaluate(source: str, data: Any, bindings: dict[str, Any] | None = None) -> Any:
    """Evaluate ``source`` against ``data`` with ``$name`` variables from ``bindings``."""
    expression = compile_expression(source)
    with _LOCKS[id(expression)]:
        frame = expression.create_frame()
        for name, value in (bindings or {}).items():
            frame.bind(name, value)
        try:
            return _plain(expression.evaluate(data, frame))
        except Exception as exc:
            # A mapping that fails on a provider payload is our defect, not the caller's.
            raise ApiError(
                502, "MAPPING_ERROR", f"could not map the provider's data: {exc}"
            ) from exc


def _plain(value: Any) -> Any:
    """JSONata sequences are list subclasses with extra state; hand back plain JSON values."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
