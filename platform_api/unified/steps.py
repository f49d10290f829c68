"""Before- and after-steps. A resource map names them; each ``type`` is implemented once here.

* ``fetch``: an extra provider call; ``result`` (JSONata over its body) is kept as
  ``$steps.<name>`` for later mappings and steps.
* ``validate``: ``assert`` (JSONata) must hold, else 400 INVALID_REQUEST with ``message``.
* ``transform``: before, returns the new unified query; after, maps each unified record.
* ``filter`` (after): keeps the records for which ``keep`` holds, for filters a provider
  cannot express exactly (a page may then hold fewer than ``limit`` records).
* ``log``: writes an analytics log line with the fields ``fields`` (JSONata) computes.
"""

from __future__ import annotations

from typing import Any

import structlog

from core.errors import invalid_request
from platform_api.unified.call import UnifiedCall, send_request
from platform_api.unified.expressions import ExpressionError, compile_expression, evaluate
from platform_api.unified.resource_map import Step

log = structlog.get_logger("switchyard.unified.steps")


async def run_step(step: Step, call: UnifiedCall, *, phase: str) -> None:
    if step.type == "fetch":
        await _fetch(step, call)
    elif step.type == "validate":
        _validate(step, call)
    elif step.type == "transform":
        _transform(step, call, phase=phase)
    elif step.type == "filter":
        _filter(step, call)
    elif step.type == "log":
        _log(step, call, phase=phase)


async def _fetch(step: Step, call: UnifiedCall) -> None:
    assert step.request is not None and step.result is not None and step.name is not None
    params = evaluate(step.query, call.query, call.bindings()) if step.query else None
    response = await send_request(call, step.request, params=params or {})
    call.steps[step.name] = evaluate(step.result, response.body, call.bindings())


def _validate(step: Step, call: UnifiedCall) -> None:
    assert step.assert_ is not None
    if not evaluate(step.assert_, call.query, call.bindings()):
        raise invalid_request(step.message or "invalid request")


def _transform(step: Step, call: UnifiedCall, *, phase: str) -> None:
    assert step.expression is not None
    if phase == "before":
        new_query = evaluate(step.expression, call.query, call.bindings())
        call.query = dict(new_query or {})
        return
    call.records = map_each(step.expression, call.records, call.bindings())


def map_each(source: str, records: list[Any], bindings: dict[str, Any]) -> list[Any]:
    """``source`` evaluated on each record, as ``evaluate`` would, record by record.

    When the Rust engine runs it, in one evaluation over the page instead: each record's value
    is the ``r`` of ``[$.({"r": (<source>)})]`` (a record's undefined value is a missing key,
    None as ``evaluate`` gives; an array stays one), which converts the page's records and
    the bindings into and out of the engine once, not once per record. An expression that
    reads the root (``$$``, which would be the page) or a parent (``%``) runs record by record,
    and so does a page the one evaluation fails on: ``evaluate`` then gives the error."""
    expression = compile_expression(source)
    if records and expression.engine == "jsonatapy" and "$$" not in source and "%" not in source:
        try:
            page = compile_expression(f'[$.({{"r": ({source})}})]')
            mapped = page.evaluate_rust(records, bindings) if page.engine == "jsonatapy" else None
        except (ExpressionError, ValueError):  # a timeout too: per record, each has its own
            mapped = None
        if isinstance(mapped, list) and len(mapped) == len(records):
            return [item.get("r") if isinstance(item, dict) else None for item in mapped]
    return [expression.evaluate(record, bindings) for record in records]


def _filter(step: Step, call: UnifiedCall) -> None:
    assert step.keep is not None
    bindings = call.bindings()
    call.records = [r for r in call.records if evaluate(step.keep, r, bindings)]


def _log(step: Step, call: UnifiedCall, *, phase: str) -> None:
    assert step.fields is not None
    data: Any = call.records if phase == "after" else call.query
    fields = evaluate(step.fields, data, call.bindings())
    log.info(
        step.name or "unified_step",
        integration=call.connection.integration.name,
        resource=f"{call.category}/{call.resource}",
        method=call.method,
        **(fields if isinstance(fields, dict) else {"value": fields}),
    )
