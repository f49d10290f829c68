"""Request bodies are bounded before parsing or authentication, on every route."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from core.settings import Settings
from switchyard.body_limit import json_body_too_deep, json_depth_exceeds
from tests.assertions import assert_error

pytestmark = pytest.mark.db

MIB = 1024 * 1024


def _chunks(total: int, size: int = 64 * 1024) -> Iterator[bytes]:
    """A body sent chunked, without Content-Length."""
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b" " * piece


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/connect-account/session"),  # public
        ("POST", "/v1/link-token"),
        ("POST", "/v1/unified/wms/orders"),
        ("PATCH", "/v1/proxy/anything"),
        ("POST", "/v1/webhook"),
        ("POST", "/no/such/route"),
    ],
)
def test_an_oversized_body_is_413_before_authentication(
    client: TestClient, settings: Settings, method: str, path: str
) -> None:
    body = b"{" + b" " * settings.max_request_body_bytes + b"}"
    # No Authorization header: the size is refused first, not the missing token.
    response = client.request(
        method, path, content=body, headers={"content-type": "application/json"}
    )
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_a_chunked_body_without_content_length_is_bounded_too(
    client: TestClient, settings: Settings
) -> None:
    response = client.post(
        "/connect-account/session",
        content=_chunks(settings.max_request_body_bytes + 1),
        headers={"content-type": "application/json"},
    )
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_a_body_at_the_limit_is_parsed_as_usual(client: TestClient, settings: Settings) -> None:
    padding = settings.max_request_body_bytes - len(b'{"link_token": ""}')
    body = b'{"link_token": "' + b"x" * padding + b'"}'
    assert len(body) == settings.max_request_body_bytes
    response = client.post(
        "/connect-account/session", content=body, headers={"content-type": "application/json"}
    )
    # Past the size check: now the ordinary validation answers (the body lacks fields).
    assert_error(response, 400, "INVALID_REQUEST")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/proxy/orders.json"),
        ("PATCH", "/v1/integrated-account/acct_x"),
        ("POST", "/v1/webhook"),
        ("POST", "/connect-account/session"),
        ("POST", "/v1/link-token"),
    ],
)
def test_json_nested_past_the_limit_is_400_everywhere(
    client: TestClient, auth_headers: dict[str, str], settings: Settings, method: str, path: str
) -> None:
    depth = settings.max_json_depth + 1
    deep = b'{"context": ' + b"[" * depth + b"]" * depth + b"}"
    response = client.request(
        method,
        path,
        params={"integrated_account_id": "acct_x"},
        content=deep,
        headers={**auth_headers, "content-type": "application/json"},
    )
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert "deeper" in body["message"]


def test_very_deep_json_on_the_proxy_is_400_not_500(
    client: TestClient, auth_headers: dict[str, str]
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    response = client.post(
        "/v1/proxy/orders.json",
        params={"integrated_account_id": "acct_x"},
        content=deep,
        headers={**auth_headers, "content-type": "application/json"},
    )
    assert_error(response, 400, "INVALID_REQUEST")


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert not json_depth_exceeds(b'{"a": "' + b"[" * 500 + b'"}', 64)
    assert not json_depth_exceeds(b"[]" * 10_000, 64)
    assert not json_depth_exceeds(b"[" * 64 + b"]" * 64, 64)
    assert json_depth_exceeds(b"[" * 65 + b"]" * 65, 64)
    assert json_depth_exceeds(b'[{"x": "\\"]"' + b", [" * 70, 64)


# Every encoding ``json.loads`` accepts from bytes (told apart by the first bytes).
PARSER_ENCODINGS = ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le",
                    "utf-32-be"]  # fmt: skip


@pytest.mark.parametrize("encoding", PARSER_ENCODINGS)
@pytest.mark.parametrize("path", ["/v1/proxy/orders.json", "/v1/link-token"])
def test_deep_json_in_any_encoding_the_parser_reads_is_400(
    client: TestClient, auth_headers: dict[str, str], settings: Settings, encoding: str, path: str
) -> None:
    depth = settings.max_json_depth + 1
    deep = '{"context": ' + "[" * depth + "]" * depth + "}"
    response = client.post(
        path,
        params={"integrated_account_id": "acct_x"},
        content=deep.encode(encoding),
        headers={**auth_headers, "content-type": "application/json"},
    )
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert "deeper" in body["message"]


@pytest.mark.parametrize("encoding", PARSER_ENCODINGS)
def test_very_deep_json_with_a_bom_or_in_utf_16_or_32_is_400_not_500(
    client: TestClient, auth_headers: dict[str, str], encoding: str
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    response = client.post(
        "/v1/proxy/orders.json",
        params={"integrated_account_id": "acct_x"},
        content=deep.encode(encoding),
        headers={**auth_headers, "content-type": "application/json"},
    )
    assert_error(response, 400, "INVALID_REQUEST")


@pytest.mark.parametrize("encoding", PARSER_ENCODINGS)
def test_depth_is_judged_on_the_text_the_parser_reads(encoding: str) -> None:
    assert not json_body_too_deep(("[" * 64 + "]" * 64).encode(encoding), 64)
    assert json_body_too_deep(("[" * 65 + "]" * 65).encode(encoding), 64)
    # U+5B5B is the bytes "[[" in UTF-16 and UTF-32: characters, not brackets.
    assert not json_body_too_deep(('["' + "\u5b5b" * 100 + '"]').encode(encoding), 64)


def test_a_body_no_parser_can_decode_is_left_to_the_parser() -> None:
    # A UTF-16 byte order mark, then half a character: json.loads refuses it too.
    assert not json_body_too_deep(b"\xff\xfe[\x00[", 1)
