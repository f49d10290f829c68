"""The two inference routes answered straight from ASGI, around FastAPI's router.

They are the hot path, and per request FastAPI's exception middleware, router, dependency
resolution and response class cost the front more CPU than the rest of the request together
(benchmarks/RESULTS.md, "Inference"). This path runs the same parts in the same order: the
request context (id, access log, metrics), the body limit, the API-token check with the rate
limit, the route's own code, and the app's exception handlers for whatever it raises; so a
caller cannot tell the two apart, and the contract tests hold both to it. The FastAPI routes
stay: they document the API and answer whatever this path does not take (another method, a
trailing slash).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.routing import APIRoute, APIRouter
from starlette.types import ASGIApp, Receive, Scope, Send

from serving.protocol import Classifier
from switchyard.body_limit import BodyLimitMiddleware
from switchyard.middleware import RequestContextMiddleware

Answer = Callable[[Classifier, bytes], Awaitable[dict[str, Any]]]
Authenticate = Callable[[Request], Awaitable[Any]]
Render = Callable[[dict[str, Any]], bytes]

_JSON_HEADERS = [(b"content-type", b"application/json")]


class InferenceFastPath:
    """Answers ``POST`` on the routes of ``router`` (mounted at ``prefix`` in ``app``);
    ``takes(scope)`` says which requests it answers."""

    def __init__(
        self,
        app: FastAPI,
        router: APIRouter,
        *,
        prefix: str,
        classifier: Classifier,
        answers: Mapping[str, Answer],
        authenticate: Authenticate,
        render: Render,
        max_body_bytes: int,
        max_json_depth: int,
    ) -> None:
        self._app = app
        self._classifier = classifier
        self._authenticate = authenticate
        self._render = render
        # The router's own route objects: metrics and logs name the route as FastAPI does.
        self._routes: dict[str, tuple[APIRoute, Answer]] = {
            prefix + route.path: (route, answers[route.path])
            for route in router.routes
            if isinstance(route, APIRoute)
            and route.path in answers
            and "POST" in (route.methods or ())
        }
        if len(self._routes) != len(answers):
            raise ValueError("every answer needs its POST route in the router")
        self._stack: ASGIApp = RequestContextMiddleware(
            BodyLimitMiddleware(
                self._answer, max_bytes=max_body_bytes, max_json_depth=max_json_depth
            )
        )

    def takes(self, scope: Scope) -> bool:
        return (
            scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in self._routes
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["app"] = self._app
        await self._stack(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        route, answer = self._routes[scope["path"]]
        scope["route"] = route
        request = Request(scope, receive)
        try:
            await self._authenticate(request)
            body = self._render(await answer(self._classifier, await request.body()))
        except Exception as exc:
            handler = self._handler_for(exc)
            if handler is None:
                raise  # the request context answers 500 in the error shape, and logs it
            response = await handler(request, exc)
            await response(scope, receive, send)
            return
        headers = [*_JSON_HEADERS, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _handler_for(self, exc: Exception) -> Callable[[Request, Exception], Awaitable[Any]] | None:
        """The app's exception handler for ``exc`` (the nearest class), as Starlette picks it."""
        handlers = self._app.exception_handlers
        for cls in type(exc).__mro__:
            if cls in handlers:
                return handlers[cls]  # type: ignore[return-value]
        return None


class SwitchyardAPI(FastAPI):
    """FastAPI with the inference fast path in front of its middleware and router."""

    fast_path: InferenceFastPath | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        fast_path = self.fast_path
        if fast_path is not None and fast_path.takes(scope):
            await fast_path(scope, receive, send)
            return
        await super().__call__(scope, receive, send)
