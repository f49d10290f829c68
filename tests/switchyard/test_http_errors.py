"""Over real HTTP, from a uvicorn process started as the front is: every error in the error
shape, also a request the HTTP parser refuses before the app sees it; ``GET /`` points the way.

Requests go over raw sockets: an HTTP client would percent-encode what these tests must send
as is (a raw ``…``, an invalid ``%ZZ`` escape), as ``curl "$SY/…?next_cursor=…"`` does not.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from core.settings import Settings
from switchyard.http_protocol import UVICORN_HTTP, describe
from switchyard.processes import service_processes
from tests.assertions import assert_error
from tests.conftest import free_port

pytestmark = pytest.mark.db

REPO = Path(__file__).resolve().parents[2]
LIST = "/v1/integrated-account"


def _front_argv(protocol: str, port: int) -> list[str]:
    """The front as `switchyard run` starts it (httptools), or the same with h11."""
    settings = Settings(host="127.0.0.1", port=port, http_workers=1)
    argv = next(p for p in service_processes(settings) if p.name == "api").argv
    assert argv[argv.index("--http") + 1] == UVICORN_HTTP
    argv[argv.index("--http") + 1] = protocol
    return argv


@pytest.fixture(
    scope="module",
    params=[UVICORN_HTTP, "switchyard.http_protocol:JsonErrorsH11Protocol"],
    ids=["httptools", "h11"],
)
def front(
    request: pytest.FixtureRequest,
    _migrated: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[int]:
    """The front `switchyard run` starts (with the protocol given) as its own process, on the
    session's database and Redis; yields its port."""
    port = free_port()
    log = tmp_path_factory.mktemp("front") / "front.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            _front_argv(request.param, port),
            cwd=REPO,
            env=dict(os.environ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the front did not start"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def _read_response(sock: socket.socket) -> httpx.Response:
    """One HTTP/1.1 response with a Content-Length, read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed mid-response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    pairs = [line.split(":", 1) for line in lines]
    headers = [(name.strip(), value.strip()) for name, value in pairs]
    length = int(dict((k.lower(), v) for k, v in headers)["content-length"])
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    return httpx.Response(int(status_line.split()[1]), headers=headers, content=body[:length])


def _exchange(
    port: int, *targets: bytes, headers: dict[str, str] | None = None
) -> list[httpx.Response]:
    """GET each target exactly as given (no encoding), one after another on one connection."""
    lines = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        responses = []
        for target in targets:
            head = f"Host: 127.0.0.1:{port}\r\n{lines}\r\n".encode()
            sock.sendall(b"GET " + target + b" HTTP/1.1\r\n" + head)
            responses.append(_read_response(sock))
        return responses


@pytest.fixture
def auth(make_token: Callable[..., str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token('development')}"}


def test_raw_utf8_in_a_query_value_is_400_in_the_error_shape_naming_it(
    front: int, auth: dict[str, str]
) -> None:
    # What `curl "$SY/v1/integrated-account?next_cursor=…"` sends: the parser refuses it.
    [response] = _exchange(front, f"{LIST}?limit=5&next_cursor=…".encode(), headers=auth)
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert body["message"].startswith("next_cursor: ")
    assert "next_cursor=%E2%80%A6" in body["message"]  # how to send it
    assert response.headers["content-type"] == "application/json"


def test_a_refused_request_keeps_the_callers_request_id(front: int) -> None:
    headers = {"X-Request-ID": "caller-chosen-0001"}
    [response] = _exchange(front, f"{LIST}?next_cursor=…".encode(), headers=headers)
    assert assert_error(response, 400, "INVALID_REQUEST")["request_id"] == "caller-chosen-0001"


def test_a_refused_request_after_others_on_one_connection(front: int, auth: dict[str, str]) -> None:
    # Keep-alive: the refusal names the parameter of the refused request, not an earlier one.
    ok, refused = _exchange(
        front, f"{LIST}?limit=1".encode(), "/v1/integrated-account?café=1".encode(), headers=auth
    )
    assert ok.status_code == 200
    assert assert_error(refused, 400, "INVALID_REQUEST")["message"].startswith("café: ")


def test_a_refused_request_line_split_across_reads_is_named(
    front: int, auth: dict[str, str]
) -> None:
    head = f"Host: 127.0.0.1\r\nAuthorization: {auth['Authorization']}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", front), timeout=30) as sock:
        sock.sendall(f"GET {LIST}?limit=5&next_cur".encode())
        time.sleep(0.3)  # the server reads the start on its own
        sock.sendall("sor=… HTTP/1.1\r\n".encode() + head)
        response = _read_response(sock)
    assert assert_error(response, 400, "INVALID_REQUEST")["message"].startswith("next_cursor: ")


def test_a_header_the_parser_refuses_is_400_in_the_error_shape(front: int) -> None:
    [response] = _exchange(front, b"/healthz", headers={"Bad Header": "x"})
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert "not a valid HTTP/1.1 request" in body["message"]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("next_cursor=%ZZ", "next_cursor"),  # not a percent-escape
        ("next_cursor=%E2%80%A6", "next_cursor"),  # the ellipsis, encoded: still no cursor
        ("limit=abc", "limit"),
        ("limit=-1", "limit"),
        ("limit=0", "limit"),
    ],
)
def test_a_malformed_query_value_is_400_naming_the_parameter(
    front: int, auth: dict[str, str], query: str, parameter: str
) -> None:
    [response] = _exchange(front, f"{LIST}?{query}".encode(), headers=auth)
    body = assert_error(response, 400, "INVALID_REQUEST")
    assert body["message"].startswith(f"{parameter}: "), body


def test_root_points_the_way(front: int) -> None:
    base = f"http://127.0.0.1:{front}"
    response = httpx.get(f"{base}/")
    assert response.status_code == 200
    assert response.json() == {
        "name": "Switchyard",
        "api": "/v1",
        "docs": "/docs",
        "openapi": "/openapi.json",
        "readme": "README.md in the repository",
    }
    document = httpx.get(f"{base}{response.json()['openapi']}").json()
    assert "/" not in document["paths"]  # a signpost, not part of the API
    assert httpx.get(f"{base}{response.json()['docs']}").status_code == 200
    body = assert_error(httpx.post(f"{base}/"), 405, "METHOD_NOT_ALLOWED")
    assert body["message"]


@pytest.mark.parametrize(
    ("request_head", "message"),
    [
        (b"GET /v1/x?a=1&b=\xe2\x80\xa6 HTTP/1.1\r\nHost: h\r\n", "b: "),
        (b"GET /v1/x?a=1&b=2 3 HTTP/1.1\r\nHost: h\r\n", "b: "),  # a raw space
        (b"GET /v1/\xc3\xa9?a=1 HTTP/1.1\r\n", "the URL path has characters"),
        (b"GET /v1/x HTTP/1.1\r\nBad Header\r\n", "not a valid HTTP/1.1 request"),
        (b"\r\n\r\n", "not a valid HTTP/1.1 request"),
    ],
)
def test_describe_names_what_is_wrong(request_head: bytes, message: str) -> None:
    assert describe(request_head).startswith(message)


def test_describe_does_not_echo_a_long_value() -> None:
    message = describe(b"GET /x?q=" + "…".encode() * 100 + b" HTTP/1.1\r\n")
    assert message.startswith("q: ") and "%E2" not in message
