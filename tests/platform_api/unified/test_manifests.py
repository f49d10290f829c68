"""Every provider manifest validates, and every recorded fixture replays to its unified result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.settings import Settings
from platform_api.integrations.catalog import get_catalog
from platform_api.unified.resource_map import all_resource_files, load_resources
from platform_api.unified.schemas import RECORD_SCHEMAS, validate_record
from tests.conftest import ServerThread
from tests.platform_api.unified.replay import (
    connection,
    fixture_paths,
    make_call,
    replay_app,
    run_call,
    summarize,
)

MANIFESTS = all_resource_files()
FIXTURES = fixture_paths()


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.parent.name)
def test_manifest_is_valid_and_its_data_fits_the_schemas(path: Path) -> None:
    manifest = load_resources(path)  # compiles every JSONata expression
    integration = get_catalog()[path.parent.name]
    for name, resource in manifest.resources.items():
        assert (integration.category, name) in RECORD_SCHEMAS, f"no unified schema for {name}"
        assert resource.mock, f"{name} has no mock data for skip_api_call"
        for record in resource.mock:
            validate_record(integration.category, name, record)
        for method in resource.methods.values():
            if method.static is not None and not isinstance(method.static.result, str):
                for record in method.static.result:
                    validate_record(integration.category, name, record)
            if method.request is not None:
                assert resource.record is not None, f"{name} calls the provider but maps nothing"


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.parent.name)
def test_every_provider_read_has_a_recorded_fixture(path: Path) -> None:
    manifest = load_resources(path)
    recorded = {p.stem for p in (path.parent / "fixtures").glob("*.json")}
    for name, resource in manifest.resources.items():
        for method in ("list", "get"):
            spec = resource.methods.get(method)
            if spec is not None and spec.request is not None:
                assert f"{name}.{method}" in recorded


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_fixture_replays_to_its_unified_result(path: Path, settings: Settings) -> None:
    fixture = json.loads(path.read_text())
    mismatches: list[str] = []
    app = replay_app(fixture["exchanges"], mismatches)
    integration = path.parent.parent.name
    with ServerThread(app) as server:
        conn = connection(integration, fixture["credentials"], server.url)
        call = make_call(settings, conn, fixture["call"])
        result = run_call(call)
    assert mismatches == []
    assert len(call.upstream_statuses) == len(fixture["exchanges"])
    assert summarize(result) == fixture["unified"]
    category = conn.integration.category
    records = result["result"] if fixture["call"]["method"] == "list" else [result]
    assert records
    for record in records:
        assert validate_record(category, fixture["call"]["resource"], record) == record
