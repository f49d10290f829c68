"""The HTTP front with every stage of a unified call timed (``bench_unified --profile``).

Serves the app as ``uvicorn switchyard.app:from_environment`` would, with the stages below
wrapped by timers and an ASGI wrapper timing each whole request, so the remainder (HTTP
parsing, routing, dependencies, middleware) can be named too. On shutdown (SIGTERM) it writes
the totals as JSON to ``--out``.

    python -m benchmarks.profiled_front --port 8000 --out stages.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import uvicorn

from benchmarks.stage_timer import Stage, timed_stages

# What a unified list call does in the front, in order; none runs inside another.
STAGES: list[Stage] = [
    ("token check (in-process; Redis on a miss)", "platform_api.api.deps", "authenticate"),
    ("account, installation and credentials (cached connection)",
     "platform_api.services.unified", "connection_for"),
    ("request checks (filters, cursor)", "platform_api.unified.engine", "receive"),
    ("before-steps (validate status)", "platform_api.unified.engine", "run_before_steps"),
    ("query mapping (JSONata)", "platform_api.unified.engine", "map_query"),
    ("provider call (HTTP over loopback, the sandbox's own work included)",
     "platform_api.unified.engine", "call_upstream"),
    ("page parsed and mapped (Rust JSONata)", "platform_api.unified.engine", "map_response"),
    ("schema validation and envelope (pydantic-core, from JSON)",
     "platform_api.unified.engine", "unified_response"),
    ("API-log row queued", "platform_api.services.api_log_writer", "ApiLogWriter.add"),
    ("response JSON", "platform_api.api.routes.unified", "_json"),
]  # fmt: skip


class RequestTimer:
    """ASGI wrapper: wall time and count of the unified requests the app serves; at shutdown
    ``on_shutdown`` receives them (uvicorn ends the process with the signal it caught, so
    nothing after ``uvicorn.run`` would run)."""

    def __init__(self, app: Any, on_shutdown: Any) -> None:
        self.app = app
        self.on_shutdown = on_shutdown
        self.seconds = 0.0
        self.requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":

            async def send_after_report(message: Any) -> None:
                if message["type"] == "lifespan.shutdown.complete":
                    self.on_shutdown(self)
                await send(message)

            await self.app(scope, receive, send_after_report)
            return
        if scope["type"] != "http" or not scope["path"].startswith("/v1/unified/"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.seconds += time.perf_counter() - started
            self.requests += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="Where the totals go (JSON).")
    args = parser.parse_args()

    from switchyard.app import from_environment

    with timed_stages(STAGES) as totals:

        def report(timer: RequestTimer) -> None:
            summary = {"requests": timer.requests, "seconds": timer.seconds, "stages": totals}
            args.out.write_text(json.dumps(summary))

        app = RequestTimer(from_environment(), on_shutdown=report)
        uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
