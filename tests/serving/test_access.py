"""Authentication, the per-token rate limit, internal errors and the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import httpx
import pytest
import redis
from fastapi import FastAPI

from core.settings import Settings, get_settings
from platform_api.db import session_scope
from platform_api.services.tokens import hash_token, list_tokens, revoke_token
from serving.rate_limit import WINDOW_SECONDS, RateLimiter
from switchyard.app import create_app
from tests.assertions import assert_error
from tests.serving.in_process import FailingClassifier, InProcessClassifier

pytestmark = [pytest.mark.db]

SINGLE = "/v1/inference/intent-classify"
BATCH = "/v1/inference/intent-classify/batch"
BODIES = {
    SINGLE: {"message": "where is my order"},
    BATCH: {"messages": [{"id": "1", "message": "hi"}]},
}


@pytest.mark.parametrize("path", [SINGLE, BATCH])
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Basic abc", "Bearer two words", "Bearer sy_not_a_real_token_0000000000"],
)
def test_inference_without_valid_token_is_401(
    live_server: str, path: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = httpx.post(f"{live_server}{path}", json=BODIES[path], headers=headers)
    assert_error(response, 401, "UNAUTHORIZED")


def test_inference_malformed_body_without_token_is_401(live_server: str) -> None:
    # Authentication comes first: an anonymous caller learns nothing about the body rules.
    response = httpx.post(f"{live_server}{SINGLE}", content=b"{oops")
    assert_error(response, 401, "UNAUTHORIZED")


def test_inference_with_revoked_token_is_401(
    live_server: str, make_token: Callable[..., str], redis_client
) -> None:
    secret = make_token("development")
    headers = {"Authorization": f"Bearer {secret}"}
    ok = httpx.post(f"{live_server}{SINGLE}", json=BODIES[SINGLE], headers=headers)
    assert ok.status_code == 200
    settings = get_settings()
    with session_scope(settings) as session:
        token = next(t for t in list_tokens(session) if t.token_hash == hash_token(secret))
        revoke_token(session, token_id=token.id, cache=redis_client, settings=settings)
    response = httpx.post(f"{live_server}{SINGLE}", json=BODIES[SINGLE], headers=headers)
    assert_error(response, 401, "UNAUTHORIZED")


# 30 s into some minute: the windows are wall-clock minutes.
PINNED_NOW = WINDOW_SECONDS * 29_000_000 + 30.0


@pytest.fixture
def pinned_limiter_clock(monkeypatch: pytest.MonkeyPatch) -> float:
    """Apps created in the test count their rate limit by a clock standing at ``PINNED_NOW``.

    On the wall clock, a minute could end between a test's requests and start a fresh count
    (a 200 where the limit says 429: test_rate_limit's boundary test shows it)."""
    monkeypatch.setattr(
        "switchyard.app.RateLimiter", partial(RateLimiter, clock=lambda: PINNED_NOW)
    )
    return PINNED_NOW


def _counts(redis_client: redis.Redis) -> dict[str, int]:
    """The rate-limit counts in Redis by key, without the prefix (``token:window``)."""
    prefix = "switchyard:ratelimit:inference:"
    counts: dict[str, int] = {}
    for key in redis_client.keys(f"{prefix}*"):
        assert isinstance(key, bytes)  # the client does not decode responses
        counts[key.decode().removeprefix(prefix)] = int(redis_client.get(key) or 0)
    return counts


def _token_id(secret: str) -> str:
    with session_scope(get_settings()) as session:
        return next(t.id for t in list_tokens(session) if t.token_hash == hash_token(secret))


def _limited(settings: Settings, **update: object) -> Settings:
    # A Redis call gets seconds, not the default 0.5 s: on a loaded machine a stall past the
    # timeout lets requests through uncounted (fail-open, test_rate_limit tests it), which
    # these tests would read as a limit that does not hold.
    return settings.model_copy(update={**update, "redis_timeout_s": 10.0})


def test_rate_limit_is_per_token_with_retry_after(
    settings: Settings,
    serve_with: Callable[[FastAPI], str],
    make_token: Callable[..., str],
    in_process_classifier: InProcessClassifier,
    pinned_limiter_clock: float,
) -> None:
    limited = _limited(settings, inference_rate_limit_per_minute=3)
    # Two fronts share the count through Redis, as separate processes or hosts would.
    urls = [
        serve_with(create_app(limited, classifier=in_process_classifier)),
        serve_with(create_app(limited, classifier=in_process_classifier)),
    ]
    first = {"Authorization": f"Bearer {make_token('development')}"}
    second = {"Authorization": f"Bearer {make_token('development')}"}
    statuses = [
        httpx.post(f"{urls[i % 2]}{SINGLE}", json=BODIES[SINGLE], headers=first).status_code
        for i in range(3)
    ]
    assert statuses == [200, 200, 200]
    response = httpx.post(f"{urls[1]}{BATCH}", json=BODIES[BATCH], headers=first)
    body = assert_error(response, 429, "RATE_LIMITED")
    assert response.headers["retry-after"] == "30"  # to the end of the pinned minute
    assert "3" in body["message"]
    # Another token has its own budget.
    assert httpx.post(f"{urls[0]}{SINGLE}", json=BODIES[SINGLE], headers=second).status_code == 200


def test_rate_limit_can_differ_by_environment(
    settings: Settings,
    serve_with: Callable[[FastAPI], str],
    make_token: Callable[..., str],
    in_process_classifier: InProcessClassifier,
    pinned_limiter_clock: float,
    redis_client: redis.Redis,
) -> None:
    limited = _limited(
        settings,
        inference_rate_limit_per_minute=0,
        inference_rate_limit_by_environment={"production": 2},
    )
    url = serve_with(create_app(limited, classifier=in_process_classifier))
    production_secret = make_token("production")
    production = {"Authorization": f"Bearer {production_secret}"}
    development = {"Authorization": f"Bearer {make_token('development')}"}

    def status(headers: dict[str, str]) -> int:
        return httpx.post(f"{url}{SINGLE}", json=BODIES[SINGLE], headers=headers).status_code

    statuses = [status(production) for _ in range(3)]
    # Every production request counted in one window (a count lost or split would show here);
    # development has no limit, so nothing of it is counted.
    window = int(pinned_limiter_clock // WINDOW_SECONDS)
    counted = {f"{_token_id(production_secret)}:{window}": 3}
    assert (statuses, _counts(redis_client)) == ([200, 200, 429], counted)
    assert [status(development) for _ in range(5)] == [200] * 5
    assert _counts(redis_client) == counted


def test_model_failure_is_503_with_retry_after_and_without_internals(
    settings: Settings, serve_with: Callable[[FastAPI], str], auth_headers: dict[str, str]
) -> None:
    failing = FailingClassifier("ActorDiedError: replica at 10.0.0.7 died")
    url = serve_with(create_app(settings, classifier=failing))
    for path, body in BODIES.items():
        response = httpx.post(f"{url}{path}", json=body, headers=auth_headers)
        message = assert_error(response, 503, "SERVICE_UNAVAILABLE")["message"]
        assert response.headers["retry-after"] == "5"
        assert "Traceback" not in message and "10.0.0.7" not in message


@pytest.mark.slow
def test_unreachable_deployment_is_503_without_internals(
    settings: Settings,
    serve_with: Callable[[FastAPI], str],
    auth_headers: dict[str, str],
    serve_app: str,
) -> None:
    # A front pointed at a Serve application that does not exist: the real path of a model
    # that cannot be reached.
    broken = settings.model_copy(update={"serve_app_name": "no-such-app", "inference_timeout_s": 3})
    url = serve_with(create_app(broken))
    response = httpx.post(f"{url}{SINGLE}", json=BODIES[SINGLE], headers=auth_headers, timeout=60)
    body = assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert "Traceback" not in body["message"] and "no-such-app" not in body["message"]


def test_a_database_that_cannot_be_reached_is_503_with_retry_after(
    settings: Settings,
    serve_with: Callable[[FastAPI], str],
    in_process_classifier: InProcessClassifier,
) -> None:
    # Nothing listens on port 1: every connection is refused, as with a database that is down.
    down = settings.model_copy(
        update={"database_url": "postgresql://switchyard@127.0.0.1:1/switchyard"}
    )
    url = serve_with(create_app(down, classifier=in_process_classifier))
    headers = {"Authorization": "Bearer sy_a_token_no_cache_has_seen"}
    for response in (
        httpx.post(f"{url}{SINGLE}", json=BODIES[SINGLE], headers=headers, timeout=30),
        httpx.get(f"{url}/v1/integrated-account", headers=headers, timeout=30),
    ):
        body = assert_error(response, 503, "SERVICE_UNAVAILABLE")
        assert response.headers["retry-after"] == "5"
        assert "database" in body["message"] and "127.0.0.1" not in body["message"]


def test_openapi_lists_inference_operations_at_1_0_0(live_server: str) -> None:
    document = httpx.get(f"{live_server}/openapi.json").json()
    assert document["info"]["version"] == "1.0.0"
    single = document["paths"][SINGLE]["post"]
    batch = document["paths"][BATCH]["post"]

    def schema(part: dict) -> dict:
        name = part["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        return document["components"]["schemas"][name]

    request_schema = schema(single["requestBody"])
    assert request_schema["required"] == ["message"]
    assert request_schema["properties"]["message"]["maxLength"] == 2048
    assert request_schema["properties"]["top_k"]["maximum"] == 5
    assert schema(batch["requestBody"])["properties"]["messages"]["maxItems"] == 100
    assert {"200", "400", "401", "422", "429", "500"} <= set(single["responses"])
    response_schema = schema(single["responses"]["200"])
    assert set(response_schema["properties"]) == {
        "request_id",
        "message",
        "predictions",
        "top_intent",
        "latency_ms",
        "model_version",
    }


@pytest.mark.parametrize("path", [SINGLE, BATCH])
def test_inference_wrong_method_is_405_in_the_error_shape(
    live_server: str, auth_headers: dict[str, str], path: str
) -> None:
    response = httpx.get(f"{live_server}{path}", headers=auth_headers)
    body = assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "detail" not in body
