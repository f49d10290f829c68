"""The Rust JSONata engine gives exactly the reference engine's output, record by record.

Every resource map's record mapping runs over every record of its provider's fake data on
both engines; every recorded fixture replays with each expression evaluated on both, and to
the same unified result. List pages, which the API maps from the provider's JSON text in one
Rust evaluation, give the same records as the record-by-record mapping, on every page of every
provider's list and on every recorded fixture. Mapped values are compared as canonical JSON (a
list and a single value differ, a missing key and a null differ) with one allowance: an
integral number may come back as ``251`` from the Rust engine and ``251.0`` from the Python one
(JSONata numbers are doubles; the Rust engine prints them as JSONata's JavaScript reference
does). The records the
API returns pass the unified schema, which gives both the same type: those must be identical
byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from platform_api.unified import engine, resource_map
from platform_api.unified.expressions import Expression, compile_expression
from platform_api.unified.resource_map import all_resource_files, get_resources, load_resources
from platform_api.unified.schemas import validate_record
from tests.conftest import ServerThread
from tests.platform_api.unified.providers import PROVIDERS, Provider
from tests.platform_api.unified.replay import (
    connection,
    fixture_paths,
    make_call,
    replay_app,
    run_call,
    summarize,
)

PROVIDER_RESOURCES = [(p, r) for p in PROVIDERS for r in p.resources]


def _numbers_as_floats(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return [_numbers_as_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _numbers_as_floats(v) for k, v in value.items()}
    return value


def canonical(value: Any) -> str:
    return json.dumps(_numbers_as_floats(value), sort_keys=True)


def both(expression: Expression, data: Any, bindings: dict[str, Any]) -> tuple[str, str]:
    def run(engine_run: Any) -> str:
        try:
            return canonical(engine_run(data, bindings))
        except Exception as exc:  # both engines must refuse the same inputs
            return f"error: {type(exc).__name__}"

    return run(expression.evaluate_rust), run(expression.evaluate_python)


@pytest.mark.parametrize("path", all_resource_files(), ids=lambda p: p.parent.name)
def test_every_expression_compiles_on_the_rust_engine(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference engine is a fallback, but no resource map needs it today: if one comes
    # to, this test names the expression, so the slower path is a decision, not an accident.
    compiled: list[Expression] = []

    def recording(source: str) -> Expression:
        compiled.append(compile_expression(source))
        return compiled[-1]

    monkeypatch.setattr(resource_map, "compile_expression", recording)
    load_resources(path)
    assert compiled
    assert [e.source for e in compiled if e.engine != "jsonatapy"] == []


@pytest.mark.parametrize(
    ("provider", "resource"), PROVIDER_RESOURCES, ids=lambda v: getattr(v, "integration", v)
)
def test_record_mapping_is_identical_on_both_engines(provider: Provider, resource: str) -> None:
    resources = get_resources(provider.integration)
    assert resources is not None
    mapping = resources.resources[resource].record
    assert mapping is not None
    expression = compile_expression(mapping)
    assert expression.engine == "jsonatapy"
    conn = connection(provider.integration, provider.credentials, "http://127.0.0.1:9")
    bindings = make_call(Settings(), conn, {"resource": resource, "method": "list"}).bindings()
    records = provider.raw(provider.build(), resource)
    assert records
    category = provider.category
    for record in records:
        rust, python = both(expression, record, bindings)
        assert rust == python, f"{provider.integration}/{resource} record {record.get('id')}"
        served = [
            json.dumps(validate_record(category, resource, run(record, bindings)), sort_keys=True)
            for run in (expression.evaluate_rust, expression.evaluate_python)
        ]
        assert served[0] == served[1]


@pytest.fixture
def dual_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every evaluation runs on both engines; differences are collected, the reference's
    output is used."""
    differences: list[str] = []
    evaluations: list[str] = []

    def evaluate(self: Expression, data: Any, bindings: dict[str, Any] | None = None) -> Any:
        rust, python = both(self, data, bindings or {})
        evaluations.append(self.source)
        if rust != python:
            differences.append(f"{self.source.strip()[:80]!r}: {rust[:200]} != {python[:200]}")
        return self.evaluate_python(data, bindings)

    monkeypatch.setattr(Expression, "evaluate", evaluate)
    monkeypatch.setattr(engine, "PAGES_IN_RUST", False)  # every record through ``evaluate``
    yield differences
    assert evaluations, "no expression was evaluated"


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_fixture_replays_identically_on_both_engines(
    path: Path, settings: Settings, dual_engine: list[str]
) -> None:
    fixture = json.loads(path.read_text())
    mismatches: list[str] = []
    with ServerThread(replay_app(fixture["exchanges"], mismatches)) as server:
        conn = connection(path.parent.parent.name, fixture["credentials"], server.url)
        run_call(make_call(settings, conn, fixture["call"]))
    assert mismatches == []
    assert dual_engine == []


@pytest.mark.parametrize("pages_in_rust", [True, False], ids=["pages in rust", "record by record"])
@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_fixture_replays_to_its_recorded_result_on_the_rust_engine(
    path: Path, settings: Settings, pages_in_rust: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "PAGES_IN_RUST", pages_in_rust)
    fixture = json.loads(path.read_text())
    mismatches: list[str] = []
    with ServerThread(replay_app(fixture["exchanges"], mismatches)) as server:
        conn = connection(path.parent.parent.name, fixture["credentials"], server.url)
        result = run_call(make_call(settings, conn, fixture["call"]))
    assert mismatches == []
    assert json.dumps(summarize(result), sort_keys=True) == json.dumps(
        fixture["unified"], sort_keys=True
    )


@pytest.mark.parametrize(
    ("provider", "resource"), PROVIDER_RESOURCES, ids=lambda v: getattr(v, "integration", v)
)
def test_list_pages_mapped_in_one_rust_evaluation_match_record_by_record(
    provider: Provider, resource: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every page of the provider's list, both ways: the same records, byte for byte."""
    mapped_in_rust: list[bool] = []
    original = Expression.evaluate_document_to_json

    def recording(self: Expression, document: Any, bindings: Any = None) -> str | None:
        mapped = original(self, document, bindings)
        mapped_in_rust.append(mapped is not None)
        return mapped

    monkeypatch.setattr(Expression, "evaluate_document_to_json", recording)
    app, _ = provider.serve(provider.build())
    pages: dict[bool, list[list[str]]] = {}
    with ServerThread(app) as server:
        conn = connection(provider.integration, provider.credentials, server.url)
        for in_rust in (True, False):
            monkeypatch.setattr(engine, "PAGES_IN_RUST", in_rust)
            pages[in_rust], cursor = [], None
            while True:
                spec = {"resource": resource, "method": "list", "limit": 20, "cursor": cursor}
                result = run_call(make_call(settings, conn, spec))
                pages[in_rust].append([json.dumps(r, sort_keys=True) for r in result["result"]])
                cursor = result["next_cursor"]
                if cursor is None:
                    break
    assert sum(len(page) for page in pages[True]) > 1
    for number, (fast, reference) in enumerate(zip(pages[True], pages[False], strict=True)):
        for fast_record, reference_record in zip(fast, reference, strict=True):
            assert fast_record == reference_record, f"page {number + 1}"
    # Every page was mapped in Rust, those with after-steps too (their records parsed from the
    # mapped JSON for the steps).
    assert mapped_in_rust and all(mapped_in_rust)
