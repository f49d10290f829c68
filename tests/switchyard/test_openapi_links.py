"""The OpenAPI links: every id a path takes is fed by the operation that creates or lists it,
every link names operations and parameters the document has, and a link that names something
missing stops the document from being built."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.settings import Settings, get_settings
from switchyard.app import create_app
from switchyard.openapi_links import (
    FEEDS,
    UNFED_PATH_PARAMETERS,
    Feed,
    LinkError,
    add_links,
    build_links,
)

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def document(_test_environment: dict[str, str]) -> dict[str, Any]:
    return create_app(get_settings()).openapi()


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for item in document["paths"].values()
            for method, op in item.items() if method in METHODS}  # fmt: skip


def _links(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(source_id, status, link)
            for source_id, op in _operations(document).items()
            for status, response in op["responses"].items()
            for link in response.get("links", {}).values()]  # fmt: skip


def test_every_path_parameter_is_fed_by_a_link(document: dict[str, Any]) -> None:
    fed = {(link["operationId"], name.removeprefix("path."))
           for _source, _status, link in _links(document)
           for name in link.get("parameters", {}) if name.startswith("path.")}  # fmt: skip
    needed = {(operation_id, p["name"]) for operation_id, op in _operations(document).items()
              for p in op.get("parameters", []) if p["in"] == "path"}  # fmt: skip
    assert needed - fed == set(UNFED_PATH_PARAMETERS)
    assert fed.isdisjoint(UNFED_PATH_PARAMETERS)  # an exception no longer needed is dropped


def test_links_name_real_operations_and_parameters(document: dict[str, Any]) -> None:
    operations = _operations(document)
    links = _links(document)
    assert len(links) > 50
    for source_id, status, link in links:
        assert status.startswith("2"), source_id
        target = operations[link["operationId"]]
        params = {f"{p['in']}.{p['name']}" for p in target.get("parameters", [])}
        assert set(link.get("parameters", {})) <= params, (source_id, link)
        if "requestBody" in link:
            assert "requestBody" in target, (source_id, link)


def test_a_create_leads_to_the_operations_on_its_record(document: dict[str, Any]) -> None:
    links = document["paths"]["/v1/webhook"]["post"]["responses"]["201"]["links"]
    assert links["get_webhook"] == {
        "operationId": "get_webhook",
        "parameters": {"path.webhook_id": "$response.body#/id"},
    }
    assert {"update_webhook", "delete_webhook", "send_webhook_test_event"} <= set(links)
    unified = document["paths"]["/v1/unified/wms/orders"]["post"]["responses"]["201"]["links"]
    assert unified["delete_wms_order"]["parameters"] == {
        "path.record_id": "$response.body#/id",
        "query.integrated_account_id": "$request.query.integrated_account_id",
    }


@pytest.mark.parametrize(
    ("feed", "names"),
    [
        (Feed("path.webhook_id", {"create_webhook": "$response.body#/id"}, ("get_hook",)),
         "get_hook"),
        (Feed("path.webhook_id", {"make_webhook": "$response.body#/id"}, ("get_webhook",)),
         "make_webhook"),
        (Feed("path.hook_id", {"create_webhook": "$response.body#/id"}, ("get_webhook",)),
         "path.hook_id"),
        (Feed("body.id", {"create_webhook": "$response.body#/id"}, ("get_webhook",)),
         "takes no body"),
        (Feed("path.webhook_id", {"list_webhooks": "$request.query.webhook_id"},
              ("get_webhook",)), "$request.query.webhook_id"),
    ],
)  # fmt: skip
def test_a_link_to_something_missing_is_refused(
    document: dict[str, Any], feed: Feed, names: str
) -> None:
    with pytest.raises(LinkError, match=names.replace("$", r"\$").replace(".", r"\.")):
        build_links(document, [feed])


def test_the_document_is_not_built_with_a_broken_link(
    monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    broken = Feed("path.webhook_id", {"create_webhook": "$response.body#/id"}, ("gone",))
    monkeypatch.setattr("switchyard.openapi_links.FEEDS", (*FEEDS, broken))
    with pytest.raises(LinkError, match="gone"):
        create_app(settings).openapi()


def test_links_are_added_once(document: dict[str, Any]) -> None:
    again = add_links(copy.deepcopy(document))
    assert again == document
