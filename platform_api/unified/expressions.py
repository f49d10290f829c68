"""JSONata expressions as the resource maps use them: compiled once, evaluated with bindings.

Two engines run the same expressions. ``jsonatapy`` (Rust) maps records ~25x faster than
``jsonata-python`` and is used wherever it compiles; ``jsonata-python`` (the reference
behaviour) runs any expression the Rust engine rejects. Both must give identical output on
every mapping and fixture: ``tests/platform_api/unified/test_engine_parity.py`` checks it
record by record.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

import jsonata
import jsonatapy

from core.errors import ApiError

_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")

# A mapping is a few field paths per record; one that runs for a second is a pathological
# payload, and must not hold a worker.
TIMEOUT_MS = 1_000


class ExpressionError(ValueError):
    """A resource-map expression does not compile."""


class Expression:
    """One compiled expression; ``evaluate`` runs it on the fastest engine that compiled it."""

    def __init__(self, source: str) -> None:
        self.source = source
        # Bindings cross into Rust on every evaluation; only the ``$names`` the expression
        # mentions are passed (a step's or page's data would otherwise be converted per record).
        self._names = frozenset(_VARIABLE.findall(source))
        # jsonatapy's compiled objects may only be used by the thread that made them (the
        # engine runs on the event loop and in worker threads): one per thread, compiled on
        # first use there (microseconds).
        self._per_thread = threading.local()
        self._compiles = self._compile_rust() is not None
        self._python: jsonata.Jsonata | None = None
        self._python_lock = threading.Lock()
        if not self._compiles:
            self._compile_python()  # the reference engine decides whether the source is valid

    def _compile_rust(self) -> jsonatapy.JsonataExpression | None:
        compiled = getattr(self._per_thread, "expression", None)
        if compiled is None:
            try:
                compiled = jsonatapy.compile(self.source, timeout=TIMEOUT_MS)
            except ValueError:
                return None
            self._per_thread.expression = compiled
        return compiled

    @property
    def engine(self) -> str:
        return "jsonatapy" if self._compiles else "jsonata-python"

    def evaluate(self, data: Any, bindings: dict[str, Any] | None = None) -> Any:
        """The value of the expression over ``data`` with ``$name`` variables from ``bindings``;
        502 ``MAPPING_ERROR`` when the provider's data cannot be mapped."""
        try:
            if self._compiles:
                return self.evaluate_rust(data, bindings)
            return self.evaluate_python(data, bindings)
        except Exception as exc:
            # A mapping that fails on a provider payload is our defect, not the caller's.
            raise ApiError(
                502, "MAPPING_ERROR", f"could not map the provider's data: {exc}"
            ) from exc

    def _rust_bindings(self, bindings: dict[str, Any] | None) -> dict[str, Any] | None:
        # jsonata-python treats a variable bound to None as undefined (an object constructor
        # leaves its key out); jsonatapy would bind JSON null. Unbound is what both agree on.
        given = bindings or {}
        return {name: given[name] for name in self._names if given.get(name) is not None} or None

    def evaluate_rust(self, data: Any, bindings: dict[str, Any] | None = None) -> Any:
        compiled = self._compile_rust()
        assert compiled is not None, "evaluate_rust on an expression the Rust engine rejects"
        return compiled.evaluate(data, self._rust_bindings(bindings))

    def evaluate_document(
        self, document: jsonatapy.JsonataData, bindings: dict[str, Any] | None = None
    ) -> Any:
        """``evaluate`` over a document parsed in Rust (``parse_document``)."""
        compiled = self._compile_rust()
        if compiled is None:
            raise ExpressionError("not compiled by the Rust engine")
        try:
            return compiled.evaluate_with_data(document, self._rust_bindings(bindings))
        except Exception as exc:
            raise ApiError(
                502, "MAPPING_ERROR", f"could not map the provider's data: {exc}"
            ) from exc

    def evaluate_document_to_json(
        self, document: jsonatapy.JsonataData, bindings: dict[str, Any] | None = None
    ) -> str | None:
        """The value over a Rust-parsed document as JSON text, staying in Rust; None when the
        Rust engine rejects the expression or fails on the document (the caller then takes
        the full engine's path, which also produces the error a failing mapping deserves)."""
        compiled = self._compile_rust()
        if compiled is None:
            return None
        try:
            return compiled.evaluate_data_to_json(document, self._rust_bindings(bindings))
        except ValueError:
            return None

    def evaluate_python(self, data: Any, bindings: dict[str, Any] | None = None) -> Any:
        expression = self._compile_python()
        # jsonata-python keeps evaluation state on the compiled object.
        with self._python_lock:
            frame = expression.create_frame()
            for name, value in (bindings or {}).items():
                frame.bind(name, value)
            return _plain(expression.evaluate(data, frame))

    def _compile_python(self) -> jsonata.Jsonata:
        if self._python is None:
            try:
                expression = jsonata.Jsonata(self.source)
            except Exception as exc:  # jsonata raises its own JException
                raise ExpressionError(f"{exc} in expression: {self.source.strip()[:120]}") from exc
            # Inputs are parsed JSON (valid by construction); jsonata-python would otherwise
            # walk the whole document on every evaluation.
            expression.set_validate_input(False)
            self._python = expression
        return self._python


def parse_document(text: str) -> jsonatapy.JsonataData | None:
    """A JSON document parsed once for several Rust evaluations; None when it is not JSON
    (or nests too deeply): the full engine then decides."""
    try:
        return jsonatapy.JsonataData.from_json(text)
    except ValueError:
        return None


def page_mapping(records: str | None, record: str) -> Expression:
    """A list answer's records mapped in one evaluation over ``{"body": …, "headers": …}``:
    ``[(body.(<records>)).(<record>)]``, the same mapping the engine otherwise applies record
    by record, for ``evaluate_document_to_json`` (the page goes from the provider's bytes to
    the schema check as JSON text, never as Python objects).
    ``tests/platform_api/unified/test_engine_parity.py`` holds the two paths to the same output.
    """
    return compile_expression(f"[(body.({records or '$'})).({record})]")


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> Expression:
    """The compiled form of ``source``; raises ExpressionError when it is not valid JSONata."""
    return Expression(source)


def evaluate(source: str, data: Any, bindings: dict[str, Any] | None = None) -> Any:
    """Evaluate ``source`` against ``data`` with ``$name`` variables from ``bindings``."""
    return compile_expression(source).evaluate(data, bindings)


def _plain(value: Any) -> Any:
    """JSONata sequences are list subclasses with extra state; hand back plain JSON values."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
