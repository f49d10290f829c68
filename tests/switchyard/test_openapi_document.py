"""The OpenAPI document describes what the service answers (its errors, in the error shape,
and the methods a path allows) and how to call it: the API token, one operation per route
under a readable id, described tags, named schemas with valid examples."""

from __future__ import annotations

import re
from unittest.mock import ANY

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from tests.assertions import assert_error

pytestmark = pytest.mark.db

METHODS = {"get", "post", "put", "patch", "delete"}


def test_every_operation_documents_its_errors_in_the_error_shape(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in document["components"]["schemas"]
    operations = [(path, method, op) for path, item in document["paths"].items()
                  for method, op in item.items() if method in METHODS]  # fmt: skip
    assert len(operations) > 50
    for path, method, operation in operations:
        responses = operation["responses"]
        where = f"{method.upper()} {path}"
        assert "503" in responses, where
        assert "Retry-After" in responses["503"].get("headers", {}), where
        if path.startswith("/v1/"):
            assert {"401", "429"} <= set(responses), where
        if "{" in path:
            assert "404" in responses, where
        if "422" in responses:  # only the contract's MESSAGE_TOO_LONG
            assert path.startswith("/v1/inference/"), where
        for status, response in responses.items():
            if status.startswith(("4", "5")):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, where


def test_a_405_allows_every_method_of_the_path(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    response = client.put("/v1/webhook/whk_nope", headers=auth_headers)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["allow"] == "DELETE, GET, PATCH"


@pytest.mark.parametrize("url", ["https://\u0084", "https://a..b/x", "https://-x.example/"])
def test_a_webhook_target_needs_a_real_hostname(
    client: TestClient, auth_headers: dict[str, str], url: str
) -> None:
    response = client.post("/v1/webhook", json={"target_url": url}, headers=auth_headers)
    assert "target_url" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_a_fixed_path_allows_its_own_methods_not_the_templates(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    response = client.options("/v1/webhook/test", headers=auth_headers)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response.headers["allow"] == "POST"


def _operations(document: dict) -> list[tuple[str, str, dict]]:
    return [(path, method, op) for path, item in document["paths"].items()
            for method, op in item.items() if method in METHODS]  # fmt: skip


def test_the_api_token_is_declared_where_the_routes_check_it(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    assert document["components"]["securitySchemes"] == {
        "bearerAuth": {"type": "http", "scheme": "bearer", "description": ANY}
    }
    for path, method, operation in _operations(document):
        url = re.sub(r"\{[^}]+\}", "x", path)
        response = client.request(method.upper(), url)
        where = f"{method.upper()} {path}"
        if path.startswith("/v1/"):
            assert operation["security"] == [{"bearerAuth": []}], where
            assert_error(response, 401, "UNAUTHORIZED")
        else:  # the connect page's session calls carry a link token instead
            assert "security" not in operation, where
            assert response.json()["error"] != "UNAUTHORIZED", where


def test_each_route_is_one_operation_with_a_unique_readable_id(
    app: FastAPI, client: TestClient
) -> None:
    document = client.get("/openapi.json").json()
    documented = [(method.upper(), path) for path, method, _ in _operations(document)]
    routes = [(method, route.path_format) for route in iter_route_contexts(app.routes)
              if getattr(route, "include_in_schema", False)
              for method in route.methods or ()]  # fmt: skip
    assert sorted(routes) == sorted(documented)
    assert len(set(documented)) == len(documented)
    ids = [op["operationId"] for _, _, op in _operations(document)]
    assert len(set(ids)) == len(ids), [i for i in ids if ids.count(i) > 1]
    assert all(re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", i) for i in ids), ids
    assert {"classify_intent", "classify_intents_batch", "list_installed_integrations",
            "get_installed_integration", "list_integrated_accounts", "create_link_token",
            "list_wms_orders", "get_wms_order", "create_wms_order"} <= set(ids)  # fmt: skip


def test_each_operation_has_one_described_tag_in_sentence_case(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    described = {tag["name"]: tag["description"] for tag in document["tags"]}
    used = set()
    for path, method, operation in _operations(document):
        assert len(operation["tags"]) == 1, f"{method.upper()} {path}: {operation['tags']}"
        used.add(operation["tags"][0])
    assert used == set(described)
    assert all(described.values()), described
    for tag in used:
        first, *rest = tag.split(" ")
        assert first[0].isupper() and (first[1:].islower() or first.isupper()), tag
        assert all(word.islower() or word.isupper() for word in rest), tag  # WMS, API


def test_schemas_have_their_own_names_and_valid_examples(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert {"IntentClassifyRequest", "IntentClassifyResponse", "IntentPrediction",
            "BatchClassifyRequest", "ErrorResponse"} <= set(schemas)  # fmt: skip
    assert not [name for name in schemas if "IntentClassifyIntent" in name]
    assert "x-component-schemas" not in str(document)
    classify = schemas["IntentClassifyRequest"]["examples"][0]
    assert classify["message"] == "where is my parcel? order #A1234 still not here"
    with_examples = [name for name, schema in schemas.items() if "examples" in schema]
    assert {"BatchClassifyRequest", "LinkTokenCreate", "InstalledIntegrationCreate",
            "OrderInput", "ReturnInput", "WebhookCreate"} <= set(with_examples)  # fmt: skip
    for name in with_examples:
        for example in schemas[name]["examples"]:
            _validator(document, name).validate(example)
    link_token = _validator(document, "LinkTokenCreate")  # exactly one of the two ids
    assert not link_token.is_valid({"tenant_id": "t1", "integrated_account_id": "acct_1"})
    assert not link_token.is_valid({"integration_name": "sandbox"})


def _validator(document: dict, name: str) -> Draft202012Validator:
    # The components ride along so that references between schemas resolve.
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return Draft202012Validator(schema)
