"""The OpenAPI document describes what the service answers: its errors, in the error shape,
and the methods a path allows."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

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
