"""A lean closed-loop HTTP/1.1 load generator on raw asyncio streams.

Client and server share the machine's two cores, so every millisecond the load generator
spends is taken from the server it measures. A general-purpose client (aiohttp) costs about
0.35 ms of CPU per request here; this one writes pre-built requests on keep-alive
connections and reads only the status line, the Content-Length and the body, at a fraction
of that. Each client sends its next request as soon as the previous answer is read.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from benchmarks.common import percentile


def _request(host: str, path: str, headers: dict[str, str], body: dict[str, Any]) -> bytes:
    payload = json.dumps(body).encode()
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}",
        "Content-Type: application/json",
        f"Content-Length: {len(payload)}",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Read one response; return its status. Bodies must carry a Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
            break
    if length:
        await reader.readexactly(length)
    return status


async def _run(
    url: str,
    make_body: Callable[[int], dict[str, Any]],
    *,
    clients: int,
    duration_s: float,
    warmup_s: float,
    headers: dict[str, str],
    on_measure_start: Callable[[], object] | None = None,
    on_measure_stop: Callable[[], object] | None = None,
) -> dict[str, Any]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    # Bodies are built before the clock starts: the generator's CPU belongs to the server.
    bodies = [_request(parts.netloc, parts.path, headers, make_body(i)) for i in range(256)]
    latencies: list[float] = []
    errors: dict[str, int] = {}
    state = {"measuring": False, "stop": False}

    async def client(n: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        i = n
        try:
            while not state["stop"]:
                started = time.perf_counter()
                writer.write(bodies[i % len(bodies)])
                status = await _read_response(reader)
                if state["measuring"] and not state["stop"]:
                    if status == 200:
                        latencies.append(time.perf_counter() - started)
                    else:
                        errors[str(status)] = errors.get(str(status), 0) + 1
                i += clients
        finally:
            writer.close()

    tasks = [asyncio.create_task(client(n)) for n in range(clients)]
    await asyncio.sleep(warmup_s)
    if on_measure_start is not None:
        on_measure_start()
    state["measuring"] = True
    started = time.perf_counter()
    await asyncio.sleep(duration_s)
    state["stop"] = True
    elapsed = time.perf_counter() - started
    if on_measure_stop is not None:
        on_measure_stop()
    await asyncio.gather(*tasks)
    ms = [1000 * x for x in latencies]
    return {
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(ms, 0.50), 1) if ms else None,
        "p95_ms": round(percentile(ms, 0.95), 1) if ms else None,
        "p99_ms": round(percentile(ms, 0.99), 1) if ms else None,
        "mean_ms": round(statistics.fmean(ms), 1) if ms else None,
        "requests": len(ms),
        "errors": errors,
        "latencies_ms": ms,
    }


def load(url: str, make_body: Callable[[int], dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    """Closed-loop load on ``url``: throughput, latency percentiles and every latency (ms).

    ``on_measure_start`` and ``on_measure_stop`` run at the edges of the measured window
    (after the warm-up), e.g. to account the CPU spent in it."""
    return asyncio.run(_run(url, make_body, **kwargs))
