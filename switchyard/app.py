"""The HTTP front: one FastAPI app hosting /v1 (platform API and inference) and health checks."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import redis
import redis.asyncio as aioredis
import structlog
from fastapi import Depends, FastAPI
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from core.errors import install_error_handlers
from core.gc_tuning import freeze_startup_heap
from core.log_config import configure_logging
from core.redis_url import get_redis_url
from core.settings import Settings, get_settings
from platform_api.api.auth_throttle import AuthFailureThrottle
from platform_api.api.deps import principal_dependency, require_principal
from platform_api.api.routes import discover_routers
from platform_api.console.routes import router as console_router
from platform_api.crypto import MissingEncryptionKey, require_key_in_production
from platform_api.redis_breaker import CircuitBreaker
from platform_api.services.api_log_writer import flush_api_log
from platform_api.services.token_cache import LocalTokenCache
from platform_api.unified.upstream import close_sessions as close_provider_sessions
from serving.client import ClassifierClient, ClientOptions
from serving.http import ANSWERS as INFERENCE_ANSWERS
from serving.http import build_inference_router
from serving.http import render as render_answer
from serving.protocol import Classifier
from serving.rate_limit import RateLimiter
from serving.shadow import ShadowOptions, ShadowTraffic
from switchyard.body_limit import BodyLimitMiddleware
from switchyard.credentials_first import refusal_before_body
from switchyard.docs import mount_docs
from switchyard.health import router as health_router
from switchyard.inference_fast_path import InferenceFastPath, SwitchyardAPI
from switchyard.middleware import RequestContextMiddleware
from switchyard.openapi import install_openapi, operation_id
from switchyard.storage_errors import install_storage_error_handlers
from switchyard.unavailable import install_unavailable_handlers

log = structlog.get_logger(__name__)

API_VERSION = "1.0.0"
DESCRIPTION = (
    "Intent inference for ecommerce customer-support messages and a unified API over "
    "customers' third-party WMS and CRM systems."
)


def create_app(settings: Settings, *, classifier: Classifier | None = None) -> FastAPI:
    """Build the front from ``settings``.

    ``classifier`` answers the inference routes; None means the Ray Serve deployment through
    the micro-batching ``ClassifierClient`` (tests pass a model run in-process instead).
    Production mode without an encryption key raises ``MissingEncryptionKey`` before anything
    is built.
    """
    require_key_in_production(settings)
    configure_logging(settings.log_level, json=settings.log_json)
    redis_url = get_redis_url(settings)
    if classifier is None:
        # Shadow traffic follows a record in this Redis (serving/shadow.py).
        record_url = redis_url if settings.inference_shadow_follow else None
        shadow = ShadowTraffic(ShadowOptions.from_settings(settings, redis_url=record_url))
        classifier = ClassifierClient(ClientOptions.from_settings(settings), shadow=shadow)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warm_up = asyncio.create_task(_warm_up(classifier))
        revocations = None
        if settings.auth_local_cache_s > 0:
            revocations = asyncio.create_task(app.state.token_cache.listen(redis_url))
        yield
        for task in (revocations, warm_up):
            if task is not None and not task.done():
                task.cancel()
        # Each step bounded: a dependency that does not answer must not hold the shutdown.
        await _shutdown_step("redis", app.state.aredis.aclose())
        app.state.redis.close()
        await _shutdown_step("classifier", classifier.aclose())
        await _shutdown_step("provider sessions", close_provider_sessions())
        await asyncio.to_thread(flush_api_log, settings)

    app = SwitchyardAPI(
        title="Switchyard API",
        version=API_VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
        servers=[{"url": "/", "description": "this server; the API lives under /v1"}],
        # /docs is served with local assets (switchyard/docs.py); ReDoc has no offline build.
        docs_url=None,
        redoc_url=None,
        # Metrics are Prometheus' (/metrics). FastAPI's OpenTelemetry hook, left on, asks the
        # environment for providers on every request (~3% of the front's CPU under load).
        telemetry={"tracing": False, "metrics": False, "logs": False},
        generate_unique_id_function=operation_id,
    )
    mount_docs(app)
    app.state.settings = settings
    # A Redis outage must cost a request milliseconds, not seconds of retries and timeouts.
    timeout = settings.redis_timeout_s
    app.state.redis = redis.Redis.from_url(
        redis_url,
        retry=Retry(ExponentialBackoff(cap=0.05), 1),
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )
    # No retry here: the breaker decides when Redis is asked again.
    app.state.aredis = aioredis.Redis.from_url(
        redis_url, socket_connect_timeout=timeout, socket_timeout=timeout
    )
    app.state.redis_breaker = CircuitBreaker(settings.redis_breaker_cooldown_s)
    # Token lookups remembered in-process while revocations can reach them (the lifespan
    # keeps the subscription).
    app.state.token_cache = LocalTokenCache(settings.auth_local_cache_s)
    # Failed token checks per client address (platform_api/api/auth_throttle.py).
    # Production only: a development service is fuzzed and toured from one address.
    app.state.auth_throttle = AuthFailureThrottle() if settings.mode == "production" else None
    app.state.classifier = classifier

    install_error_handlers(app)
    install_unavailable_handlers(app)
    install_storage_error_handlers(app)
    # Inside the request context (added first), so a refusal carries the request id.
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_request_body_bytes,
        max_json_depth=settings.max_json_depth,
        before_body=refusal_before_body,
    )
    app.add_middleware(RequestContextMiddleware)
    authenticated = [Depends(require_principal)]
    # The per-token limit: one Redis count per group of concurrent requests (rate_limit.py).
    limiter = RateLimiter(
        limit_per_minute=settings.inference_rate_limit_per_minute,
        by_environment=settings.inference_rate_limit_by_environment,
    )
    inference_caller = principal_dependency(limiter)
    # First: routes are matched in order, and inference is the hot path.
    inference_router = build_inference_router(classifier=classifier)
    app.include_router(inference_router, prefix="/v1", dependencies=[Depends(inference_caller)])
    # ... and most requests never reach the router at all (switchyard/inference_fast_path.py).
    app.fast_path = InferenceFastPath(
        app,
        inference_router,
        prefix="/v1",
        classifier=classifier,
        answers=INFERENCE_ANSWERS,
        authenticate=lambda request: inference_caller(request, settings),
        render=render_answer,
        max_body_bytes=settings.max_request_body_bytes,
        max_json_depth=settings.max_json_depth,
    )
    app.include_router(health_router)
    private_routers, public_routers = discover_routers()
    for router in private_routers:
        app.include_router(router, prefix="/v1", dependencies=authenticated)
    for router in public_routers:
        app.include_router(router)
    app.include_router(console_router)  # the operator console (out of the API document)

    # Last: never on the hot path. Out of the API document: it is a signpost, not the API.
    @app.get("/", include_in_schema=False)
    async def root() -> dict[str, str]:
        """Where to go from the bare host (a browser, ``curl $SY``), instead of a 404."""
        return {
            "name": "Switchyard",
            "api": "/v1",
            "docs": "/docs",
            "openapi": "/openapi.json",
            "readme": "README.md in the repository",
        }

    install_openapi(app)
    return app


def from_environment() -> FastAPI:
    """The app with the process's settings: what ``uvicorn --factory`` and ``switchyard run``
    start."""
    # The deployment handle's router on the front's own event loop instead of a thread of its
    # own (what RAY_SERVE_THROUGHPUT_OPTIMIZED=1 sets in a caller): one thread hop less per
    # model call (+9% single requests/s at 32 clients in one run, within the spread in others:
    # benchmarks/RESULTS.md). Read by Ray when it is imported, which the front does only when
    # it first calls the model.
    os.environ.setdefault("RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP", "0")
    try:
        return create_app(get_settings())
    except MissingEncryptionKey as exc:
        # One line naming the setting, not a traceback through uvicorn's loader.
        raise SystemExit(f"switchyard: {exc}") from None


SHUTDOWN_STEP_S = 5.0


async def _shutdown_step(name: str, step: Coroutine[Any, Any, Any]) -> None:
    """Run one shutdown step for at most ``SHUTDOWN_STEP_S``; a step that fails or hangs is
    logged and left behind (``asyncio.wait`` does not wait for a cancelled task to finish)."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=SHUTDOWN_STEP_S)
    if not done:
        task.cancel()
        log.warning("shutdown_step_timed_out", step=name, timeout_s=SHUTDOWN_STEP_S)
    elif task.exception() is not None:
        log.warning("shutdown_step_failed", step=name, error=repr(task.exception()))


async def _warm_up(classifier: Classifier) -> None:
    # Join Ray now rather than on the first request, which would otherwise pay for it.
    await classifier.ready()
    # Everything loaded by now lives as long as the process; a full collection that walks it
    # stalls every request in flight (measured: ~240 ms), so take it out of the collector's way.
    freeze_startup_heap()
