"""Recorded provider exchanges: record them from the fakes, replay them to the engine.

A fixture (``integrations/providers/<name>/fixtures/<resource>.<method>.json``) holds the
unified call, every provider request/response it caused, and the unified result. Replaying
serves the recorded responses in order from a loopback server that checks each request is
the recorded one, so a mapping change that alters a request or a result fails the replay.

Record (after changing a fake or a mapping on purpose, then review the diff):
    .venv/bin/python -m tests.platform_api.unified.replay
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import RequestResponseEndpoint, _StreamingResponse

from core.settings import Settings
from platform_api.integrations.catalog import PROVIDERS_DIR, get_manifest
from platform_api.integrations.provider_access import auth_parts
from platform_api.unified import engine, upstream
from platform_api.unified.call import ProviderConnection, UnifiedCall
from platform_api.unified.requests import UnifiedRequest
from platform_api.unified.resource_map import get_resources

AUTH_HEADERS = {"authorization", "x-shopify-access-token"}


def fixture_paths() -> list[Path]:
    return sorted(PROVIDERS_DIR.glob("*/fixtures/*.json"))


def connection(integration: str, credentials: dict[str, str], base_url: str) -> ProviderConnection:
    manifest = get_manifest(integration)
    resources = get_resources(integration)
    assert manifest is not None and resources is not None
    return ProviderConnection(
        environment_id="development",
        integrated_account_id="acct_fixture",
        integration=manifest,
        resources=resources,
        base_url=base_url,
        auth=auth_parts(manifest, credentials),
    )


def make_call(settings: Settings, conn: ProviderConnection, spec: dict[str, Any]) -> UnifiedCall:
    request = UnifiedRequest(
        environment_id=conn.environment_id,
        integrated_account_id=conn.integrated_account_id,
        category=conn.integration.category,
        resource=spec["resource"],
        method=spec["method"],
        record_id=spec.get("record_id"),
        query=dict(spec.get("query") or {}),
        body=spec.get("body"),
        limit=spec.get("limit", 50),
        cursor=spec.get("cursor"),
    )
    return UnifiedCall.start(settings, conn, request)


def run_call(call: UnifiedCall) -> Any:
    """The engine's answer to ``call`` in a loop of its own (its provider sessions closed)."""

    async def run() -> Any:
        try:
            return engine.as_python(await engine.run(call))
        finally:
            await upstream.close_sessions()

    return asyncio.run(run())


def summarize(result: Any) -> Any:
    """The result with the (key-dependent) signed cursor reduced to whether there is one."""
    if isinstance(result, dict) and "next_cursor" in result:
        return {**result, "next_cursor": result["next_cursor"] is not None}
    return result


def replay_app(exchanges: list[dict[str, Any]], mismatches: list[str]) -> FastAPI:
    """Serve ``exchanges`` in order; note any request that differs from the recording."""
    app = FastAPI()
    queue = list(exchanges)

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def serve(request: Request, path: str) -> Response:
        if not queue:
            mismatches.append(f"unexpected extra request {request.method} /{path}")
            return Response(status_code=599)
        recorded = queue.pop(0)
        req = recorded["request"]
        body = await request.body()
        seen = {
            "method": request.method,
            "path": request.url.path,
            "query": dict(request.query_params),
            "json": json.loads(body) if body else None,
        }
        for key in ("method", "path", "query", "json"):
            if seen[key] != req[key]:
                mismatches.append(f"{key}: sent {seen[key]!r}, recorded {req[key]!r}")
        resp = recorded["response"]
        if resp["body"] is None:
            return Response(status_code=resp["status"], headers=resp["headers"])
        return JSONResponse(resp["body"], status_code=resp["status"], headers=resp["headers"])

    return app


# --- recording ------------------------------------------------------------------------------
def _record_one(provider: Any, resource: str, method: str) -> dict[str, Any]:
    from tests.conftest import ServerThread

    data = provider.build()
    app, state = provider.serve(data)
    exchanges: list[dict[str, Any]] = []

    @app.middleware("http")
    async def _capture(request: Request, call_next: RequestResponseEndpoint) -> Response:
        body = await request.body()
        response = await call_next(request)
        # What BaseHTTPMiddleware hands back; the only Response kind with a body iterator.
        assert isinstance(response, _StreamingResponse)
        chunks: list[bytes] = []
        async for chunk in response.body_iterator:
            assert isinstance(chunk, bytes)  # the middleware streams raw body bytes
            chunks.append(chunk)
        raw = b"".join(chunks)
        keep = {"link", "page-number", "total-pages", "total-count", "page-size"}
        exchanges.append({
            "request": {"method": request.method, "path": request.url.path,
                        "query": dict(request.query_params),
                        "json": json.loads(body) if body else None},
            "response": {"status": response.status_code,
                         "headers": {k: v for k, v in response.headers.items() if k in keep},
                         "body": json.loads(raw) if raw else None},
        })  # fmt: skip
        return Response(raw, response.status_code, dict(response.headers))

    record_id = None
    if method == "get":
        first = provider.raw(data, resource)[1]
        record_id = str(first["id"]).rsplit("/", 1)[-1]
    spec = {"resource": resource, "method": method, "record_id": record_id, "limit": 2}
    with ServerThread(app) as server:
        conn = connection(provider.integration, provider.credentials, server.url)
        result = run_call(make_call(Settings(), conn, spec))
    for exchange in exchanges:
        link = exchange["response"]["headers"].get("link")
        if link:  # the recorded base URL is the fake's; keep only the part after the host
            exchange["response"]["headers"]["link"] = "<http://replay/" + link.split("/", 3)[3]
    return {"call": spec, "exchanges": exchanges, "unified": summarize(result)}


def record_all() -> None:
    from tests.platform_api.unified.providers import PROVIDERS

    # Cursors are signed; recordings keep only whether one was returned, so any key will do.
    os.environ.setdefault("SWITCHYARD_ENCRYPTION_KEY", Fernet.generate_key().decode())
    for provider in PROVIDERS:
        folder = PROVIDERS_DIR / provider.integration / "fixtures"
        folder.mkdir(exist_ok=True)
        for resource in provider.resources:
            for method in ("list", "get"):
                fixture = _record_one(provider, resource, method)
                fixture["credentials"] = provider.credentials
                path = folder / f"{resource}.{method}.json"
                path.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
                print("recorded", path.relative_to(PROVIDERS_DIR))


if __name__ == "__main__":
    record_all()
