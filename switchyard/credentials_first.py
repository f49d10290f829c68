"""API tokens are checked before a request body is read.

FastAPI reads and parses a route's JSON body before its dependencies run, so a caller with no
valid token could make the front parse a MiB of nested JSON (hundreds of ms of event-loop time,
``benchmarks/bench_body_scan.py``) only to be told 401. For the platform's /v1 routes that
carry a body, the token is checked first: a missing, malformed, unknown or throttled one is
refused before a byte of the body is read. The route's own dependency checks it again (the
in-process token cache answers), so this only ever refuses earlier, never admits.

Inference routes are left out: they read their bodies after authenticating already, and they
are the hot path. Anything other than a refusal (the database down, say) lets the request
through, for the route to answer as usual.
"""

from __future__ import annotations

from fastapi import Request
from starlette.responses import Response
from starlette.types import Scope

from core.errors import ApiError, error_response
from platform_api.api.deps import bearer_secret, checked_principal

CHECKED_PREFIX = "/v1/"
UNCHECKED_PREFIX = "/v1/inference/"
BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


async def refusal_before_body(scope: Scope) -> Response | None:
    """The 401 or 429 a /v1 platform request gets for its credentials, or None to go on."""
    path: str = scope["path"]
    if scope["method"] not in BODY_METHODS or not path.startswith(CHECKED_PREFIX):
        return None
    if path.startswith(UNCHECKED_PREFIX):
        return None
    request = Request(scope)
    header = request.headers.get("authorization")
    secret = bearer_secret(header)
    if secret is None:
        problem = "malformed" if header else "missing"
        return _refusal(
            ApiError(
                401,
                "UNAUTHORIZED",
                f"{problem} Authorization header (expected: Bearer <API token>)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        )
    try:
        await checked_principal(request, request.app.state.settings, secret)
    except ApiError as refused:
        return _refusal(refused)
    except Exception:  # noqa: BLE001 - the route meets it again and answers it (503, ...)
        return None
    return None


def _refusal(error: ApiError) -> Response:
    return error_response(error.status_code, error.code, error.message, error.headers)
