"""A hostile upstream cannot exhaust memory or crash a call: answers are capped, odd
Retry-After values are ignored, and the Link-header parser is linear."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.testclient import TestClient
from httpx import Response as HttpResponse

from core.settings import Settings, get_settings
from platform_api.unified.paging import link_next
from platform_api.unified.upstream import parse_retry_after
from tests.assertions import assert_error
from tests.conftest import ServerThread
from tests.platform_api.unified.helpers import make_account

pytestmark = pytest.mark.db

CAP = 4096


def hostile_app() -> FastAPI:
    app = FastAPI()

    @app.post("/big")
    async def big() -> Response:
        return Response(b"x" * (CAP + 1), media_type="text/plain")

    @app.post("/big-chunked")
    async def big_chunked() -> StreamingResponse:
        async def forever() -> AsyncIterator[bytes]:
            for _ in range(1000):  # bounded: 1000 x 1 KiB, far past the cap
                yield b"y" * 1024

        return StreamingResponse(forever(), media_type="application/json")

    @app.post("/small")
    async def small() -> JSONResponse:
        return JSONResponse({"ok": True})

    @app.post("/deep")
    async def deep() -> Response:
        return Response(b"[" * 3000 + b"]" * 3000, media_type="application/json")

    @app.post("/limited/{value}")
    async def limited(value: str) -> Response:
        return Response(status_code=429, headers={"Retry-After": value})

    return app


@pytest.fixture
def settings(
    _test_environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    monkeypatch.setenv("SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES", str(CAP))
    monkeypatch.setenv("SWITCHYARD_UPSTREAM_MAX_RETRIES", "1")
    monkeypatch.setenv("SWITCHYARD_UPSTREAM_RETRY_DEFAULT_S", "0")
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.fixture
def account(db: None) -> Iterator[str]:
    with ServerThread(hostile_app()) as server:
        yield make_account("sandbox", {"api_key": "sk_hostile"}, base_url=server.url)


def _proxy(client: TestClient, headers: dict[str, str], account: str, path: str) -> HttpResponse:
    return client.post(
        f"/v1/proxy/{path}", params={"integrated_account_id": account}, headers=headers
    )


@pytest.mark.parametrize("path", ["big", "big-chunked"])
def test_an_answer_past_the_cap_is_502(
    client: TestClient, auth_headers: dict[str, str], account: str, path: str
) -> None:
    body = assert_error(_proxy(client, auth_headers, account, path), 502, "UPSTREAM_ERROR")
    assert str(CAP) in body["message"]


def test_an_answer_within_the_cap_passes(
    client: TestClient, auth_headers: dict[str, str], account: str
) -> None:
    response = _proxy(client, auth_headers, account, "small")
    assert response.status_code == 200 and response.json() == {"ok": True}


def test_deeply_nested_upstream_json_is_502_not_500(
    client: TestClient, auth_headers: dict[str, str], account: str
) -> None:
    assert_error(_proxy(client, auth_headers, account, "deep"), 502, "UPSTREAM_ERROR")


@pytest.mark.parametrize(
    "value", ["inf", "-inf", "nan", "1e400", "soon", "Wed, 99 Foo 2026 99:99:99 GMT", "9" * 40]
)
def test_an_odd_retry_after_is_ignored_not_a_500(
    client: TestClient, auth_headers: dict[str, str], account: str, value: str
) -> None:
    response = _proxy(client, auth_headers, account, f"limited/{value}")
    assert_error(response, 429, "RATE_LIMITED")
    assert response.headers["retry-after"].isdigit()


def test_retry_after_parsing() -> None:
    assert parse_retry_after("7", default=1.0) == 7.0
    assert parse_retry_after("-3", default=1.0) == 0.0
    for odd in ("inf", "nan", "Infinity", "garbage", "", None, "Thu, 01 Jan 1970 00:00:00"):
        assert parse_retry_after(odd, default=1.5) == 1.5, odd


def test_link_header_parser_handles_hostile_input() -> None:
    # Each of these made the previous backtracking pattern quadratic.
    assert link_next("<" * 200_000) is None
    assert link_next("<" + "a" * 200_000) is None
    assert link_next('<x>; rel="prev", ' * 20_000) is None
    header = '<https://s.myshopify.com/o.json?page_info=p>; rel="previous", <https://s.myshopify.com/o.json?page_info=n&limit=5>; rel="next"'  # noqa: E501
    assert link_next(header) == "https://s.myshopify.com/o.json?page_info=n&limit=5"
    assert link_next("<https://a/b?c=1>; rel=next") == "https://a/b?c=1"
