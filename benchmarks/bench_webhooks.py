"""Webhook delivery throughput and idle latency, outbox to receiver, loopback only.

Runs what `switchyard run` runs for webhooks — the webhooks worker and the `switchyard
dispatcher` process — against a database and a Redis emptied first, with a receiver on
127.0.0.1 that answers 200 at once. Measures

1. throughput: N events committed in one transaction, time until the receiver has all N
   (--repeat bursts; the median and the spread);
2. end-to-end latency at idle: one event at a time, from its commit to its arrival, and where
   that time goes (the dispatcher's pass and the job's claim carry timestamps);
3. duplicates seen by the receiver and deliveries lost (committed but never received, or not
   recorded as succeeded in one attempt).

Prints progress on stderr and JSON on stdout, and writes its setup's part of its section of
benchmarks/RESULTS.md (in place of the previous one; the other setup's part stays).

    python -m benchmarks.bench_webhooks                 # SQLite + embedded Redis, ~40 s
    python -m benchmarks.bench_webhooks --events 5000
    python -m benchmarks.bench_webhooks \\
        --database-url postgresql://postgres@127.0.0.1:5432/bench_hooks \\
        --redis-url redis://127.0.0.1:6379/4        # PostgreSQL + a Redis server
    python -m benchmarks.bench_webhooks --workers 2  # two webhooks workers, as
                                                    # SWITCHYARD_WORKERS_WEBHOOKS=2 runs

The database and Redis default to DATABASE_URL and REDIS_URL when set, else a fresh SQLite
file and an embedded Redis. Give it a database and a Redis database of its own: a PostgreSQL
database's public schema is dropped and migrated again, and the Redis database is flushed.
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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    RESULTS,
    free_port,
    machine,
    percentile,
    read_section,
    replace_subsection,
    write_section,
)

# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Webhooks"
INTRO = (
    "What runs: `switchyard worker --queues webhooks` (RQ's in-process worker, as "
    "`switchyard run` starts it) and the `switchyard dispatcher`, against a database and a "
    "Redis emptied first; a receiver on loopback answers 200 at once. Throughput: N events "
    "committed in one transaction until the receiver has all N, repeated; idle latency: one "
    "event at a time, from the commit's return to the request's arrival."
)
TARGET_DELIVERIES_PER_S = 2_000
TARGET_IDLE_P50_MS = 15.0
# The processes the benchmark starts (python -m <these>).
DISPATCHER = ["switchyard.cli", "dispatcher"]
WORKERS = {
    # The webhooks worker: RQ's in-process worker (platform_api/webhooks/worker.py).
    "webhooks": ["platform_api.tasks.webhooks"],
    # What `switchyard run` starts for the webhooks class (the same in-process worker).
    "switchyard": ["switchyard.cli", "worker", "--queues", "webhooks"],
}


@dataclass(frozen=True)
class Setup:
    """Where the service writes, and how RESULTS.md names it."""

    database_url: str
    redis_url: str | None  # None: an embedded Redis, started in this process

    @property
    def postgres(self) -> bool:
        return self.database_url.startswith("postgres")

    @property
    def label(self) -> str:
        database = "PostgreSQL" if self.postgres else "SQLite"
        return f"{database} + {'Redis server' if self.redis_url else 'embedded Redis'}"


class Receiver:
    """A bare ASGI endpoint that notes when each ``webhook-id`` arrives."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}  # perf_counter
        self.wall: dict[str, float] = {}  # time.time(), to set against the rows' timestamps
        self.duplicates = 0
        self.lock = threading.Lock()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:  # noqa: ANN401
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        now, wall = time.perf_counter(), time.time()
        event_id = dict(scope["headers"]).get(b"webhook-id", b"").decode()
        with self.lock:
            if event_id in self.arrivals:
                self.duplicates += 1
            else:
                self.arrivals[event_id] = now
                self.wall[event_id] = wall
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def count(self) -> int:
        with self.lock:
            return len(self.arrivals)

    def last_arrival(self) -> float:
        with self.lock:
            return max(self.arrivals.values())


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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


def database_backends(settings: Any) -> list[int]:
    """Process ids of the PostgreSQL backends serving this database (the service's pooled
    connections), when the server runs on this machine; none for SQLite."""
    import sqlalchemy as sa

    from platform_api.db import get_engine

    engine = get_engine(settings)
    if engine.dialect.name != "postgresql":
        return []
    query = "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
    with engine.connect() as connection:
        pids = [int(pid) for pid in connection.execute(sa.text(query)).scalars()]
    return [pid for pid in pids if Path(f"/proc/{pid}/stat").exists()]


def backends_cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # a backend that ended meanwhile
            total += cpu_seconds(pid)
    return total


def wait_for(receiver: Receiver, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while receiver.count() < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {receiver.count()} of {count} deliveries arrived")
        time.sleep(0.002)


def resolve_setup(args: argparse.Namespace, workdir: Path) -> Setup:
    database_url = (
        args.database_url or os.environ.get("DATABASE_URL") or f"sqlite:///{workdir / 'bench.db'}"
    )
    return Setup(database_url, args.redis_url or os.environ.get("REDIS_URL") or None)


def empty_database(settings: Any) -> None:
    """A PostgreSQL database starts from an empty schema (a SQLite file is new anyway)."""
    import sqlalchemy as sa

    from platform_api.db import get_engine, migrate

    engine = get_engine(settings)
    if engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(sa.text("DROP SCHEMA public CASCADE"))
            connection.execute(sa.text("CREATE SCHEMA public"))
    migrate(settings)


def empty_redis(settings: Any) -> None:
    """Jobs and kicks left by an interrupted run would run inside this one."""
    from platform_api.queueing.queues import get_redis

    get_redis(settings).flushdb()


def configure(setup: Setup, workdir: Path) -> Any:
    """Point this process (and the processes it starts) at ``setup``; its settings."""
    from cryptography.fernet import Fernet

    from core.redis_url import get_redis_url
    from core.settings import get_settings

    os.environ.update({
        "SWITCHYARD_VAR_DIR": str(workdir),
        "SWITCHYARD_LOG_LEVEL": os.environ.get("SWITCHYARD_LOG_LEVEL", "WARNING"),
        "SWITCHYARD_WEBHOOK_ALLOWED_HOSTS": '["127.0.0.1"]',
        "SWITCHYARD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "DATABASE_URL": setup.database_url,
    })  # fmt: skip
    os.environ.pop("REDIS_URL", None)
    if setup.redis_url:
        os.environ["REDIS_URL"] = setup.redis_url
    get_settings.cache_clear()
    # The embedded Redis (when REDIS_URL is unset) starts here; the processes join it.
    os.environ["REDIS_URL"] = get_redis_url(get_settings())
    get_settings.cache_clear()
    return get_settings()


def start(module: list[str], logs: Path | None, name: str) -> subprocess.Popen:
    sink: Any = subprocess.DEVNULL
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        sink = (logs / f"{name}.log").open("wb")
    argv = [sys.executable, "-m", *module]
    return subprocess.Popen(argv, env=dict(os.environ), stdout=sink, stderr=subprocess.STDOUT)


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def commit(settings: Any, n: int) -> tuple[float, float, list[str]]:
    """Record ``n`` events in one transaction; when the commit returned (perf_counter and
    wall clock) and the events' ids."""
    from platform_api.db import session_scope
    from platform_api.services.events import record_event

    with session_scope(settings) as session:
        ids = [
            record_event(
                session,
                environment_id="development",
                event_type="integrated_account:updated",
                payload={"id": f"acct_{i}", "tenant_id": "bench", "status": "active"},
                settings=settings,
            ).id
            for i in range(n)
        ]
    return time.perf_counter(), time.time(), ids


def stage_times(settings: Any, event_id: str) -> tuple[float, float]:
    """When the dispatcher's pass that fanned the event out began, and when the delivery job's
    claim began (both wall clock, from the rows: ``created_at`` and the attempt's start)."""
    from sqlmodel import col, select

    from platform_api.db import session_scope
    from platform_api.tables.common import as_utc
    from platform_api.tables.webhook import WebhookAttempt, WebhookDelivery

    with session_scope(settings) as session:
        delivery, attempt = session.exec(
            select(WebhookDelivery, WebhookAttempt)
            .join(WebhookAttempt, col(WebhookAttempt.delivery_id) == col(WebhookDelivery.id))
            .where(col(WebhookDelivery.event_id) == event_id)
        ).one()

    def seconds(moment: datetime | None) -> float:
        utc = as_utc(moment)
        assert utc is not None  # both are set by now
        return utc.timestamp()

    return seconds(delivery.created_at), seconds(attempt.started_at)


def idle_latencies(
    settings: Any, receiver: Receiver, samples: int, timeout: float
) -> dict[str, list[float]]:
    """One event at a time: commit → arrival, split at the dispatcher's pass and the job's
    claim (ms)."""
    stages: dict[str, list[float]] = {"total": [], "wake": [], "fan_out_to_job": [], "job": []}
    for i in range(samples):
        before = receiver.count()
        committed, committed_wall, (event_id,) = commit(settings, 1)
        wait_for(receiver, before + 1, timeout)
        with receiver.lock:
            arrived, arrived_wall = receiver.arrivals[event_id], receiver.wall[event_id]
        stages["total"].append((arrived - committed) * 1000)
        fanned_out, claimed = stage_times(settings, event_id)
        stages["wake"].append((fanned_out - committed_wall) * 1000)
        stages["fan_out_to_job"].append((claimed - fanned_out) * 1000)
        stages["job"].append((arrived_wall - claimed) * 1000)
        if (i + 1) % 25 == 0:
            progress(f"  idle: {i + 1}/{samples} events")
        time.sleep(0.05)  # idle between events
    return stages


def burst(
    settings: Any, receiver: Receiver, procs: list[subprocess.Popen], events: int, timeout: float
) -> dict[str, Any]:
    """``events`` committed at once; deliveries/s until the last arrives, and CPU per delivery
    of each process: the dispatcher, the worker, this one (the receiver, the commit) and the
    database's backends."""
    start_count = receiver.count()
    backends = database_backends(settings)
    pids = [p.pid for p in procs] + [os.getpid()]
    committed, _, _ = commit(settings, events)
    # From the commit's return on: writing the events is the API's cost, not delivery's.
    cpu_before = [cpu_seconds(pid) for pid in pids] + [backends_cpu_seconds(backends)]
    wait_for(receiver, start_count + events, timeout)
    elapsed = receiver.last_arrival() - committed
    time.sleep(0.5)  # let the last job finish its bookkeeping
    cpu_after = [cpu_seconds(pid) for pid in pids] + [backends_cpu_seconds(backends)]
    cpu = [(a - b) * 1000 / events for a, b in zip(cpu_after, cpu_before, strict=True)]
    return {
        "seconds": elapsed,
        "deliveries_per_s": events / elapsed,
        "dispatcher_cpu_ms": cpu[0],
        "worker_cpu_ms": sum(cpu[1:-2]),  # all the webhooks workers together
        "receiver_cpu_ms": cpu[-2],
        "database_cpu_ms": cpu[-1] if backends else None,  # SQLite: inside the processes
    }


def delivery_counts(settings: Any) -> dict[str, int]:
    """Events, deliveries, deliveries succeeded, and attempts, from the database."""
    import sqlalchemy as sa

    from platform_api.db import session_scope
    from platform_api.tables.outbox import OutboxEvent
    from platform_api.tables.webhook import SUCCEEDED, WebhookAttempt, WebhookDelivery

    def count(statement: Any) -> int:
        with session_scope(settings) as session:
            return int(session.execute(statement).scalar_one())

    return {
        "events": count(sa.select(sa.func.count()).select_from(OutboxEvent)),
        "deliveries": count(sa.select(sa.func.count()).select_from(WebhookDelivery)),
        "succeeded": count(
            sa.select(sa.func.count())
            .select_from(WebhookDelivery)
            .where(WebhookDelivery.status == SUCCEEDED)  # type: ignore[arg-type]
        ),
        "attempts": count(sa.select(sa.func.count()).select_from(WebhookAttempt)),
    }


def run(args: argparse.Namespace, setup: Setup, workdir: Path) -> dict[str, Any]:
    from platform_api.db import session_scope
    from platform_api.services.webhooks import create_webhook
    from platform_api.tables.webhook import WebhookCreate

    settings = configure(setup, workdir)
    progress(f"{setup.label}: emptying the database and Redis ...")
    empty_database(settings)
    empty_redis(settings)
    receiver = Receiver()
    port = free_port()
    procs: list[subprocess.Popen] = []
    with serve(receiver, port):
        with session_scope(settings) as session:
            create_webhook(
                session,
                environment_id="development",
                data=WebhookCreate(target_url=f"http://127.0.0.1:{port}/hook"),
                settings=settings,
            )
        try:
            procs = [start(DISPATCHER, args.logs, "dispatcher")]
            procs += [
                start(WORKERS[args.worker], args.logs, f"worker-{i + 1}")
                for i in range(args.workers)
            ]
            progress("warming up (the processes start, connections open) ...")
            commit(settings, 20)
            wait_for(receiver, 20, args.timeout)
            progress(f"idle latency: {args.idle_samples} events, one at a time ...")
            idle = idle_latencies(settings, receiver, args.idle_samples, args.timeout)
            bursts = []
            for i in range(args.repeat):
                progress(f"burst {i + 1}/{args.repeat}: {args.events} events at once ...")
                bursts.append(burst(settings, receiver, procs, args.events, args.timeout))
                progress(f"  {bursts[-1]['deliveries_per_s']:.0f} deliveries/s")
        finally:
            stop(procs)
    counts = delivery_counts(settings)
    return report(setup, settings, args, idle, bursts, receiver, counts)


def report(
    setup: Setup,
    settings: Any,
    args: argparse.Namespace,
    idle: dict[str, list[float]],
    bursts: list[dict[str, Any]],
    receiver: Receiver,
    counts: dict[str, int],
) -> dict[str, Any]:
    median = sorted(bursts, key=lambda b: b["deliveries_per_s"])[len(bursts) // 2]
    rates = [round(b["deliveries_per_s"], 1) for b in bursts]
    return {
        "setup": setup.label,
        "machine": machine(),
        "batch_size": settings.webhook_batch_size,
        "events": args.events,
        "bursts": len(bursts),
        "deliveries_per_s": round(median["deliveries_per_s"], 1),
        "deliveries_per_s_each_burst": rates,
        "seconds": round(median["seconds"], 3),
        # Load-independent cost: CPU per delivery in each process during the median burst.
        "dispatcher_cpu_ms_per_delivery": round(median["dispatcher_cpu_ms"], 3),
        "worker_cpu_ms_per_delivery": round(median["worker_cpu_ms"], 3),
        "receiver_cpu_ms_per_delivery": round(median["receiver_cpu_ms"], 3),
        "database_cpu_ms_per_delivery": _round(median["database_cpu_ms"], 3),
        "idle_samples": len(idle["total"]),
        "idle_p50_ms": round(statistics.median(idle["total"]), 1),
        "idle_p99_ms": round(percentile(idle["total"], 0.99), 1),
        "idle_max_ms": round(max(idle["total"]), 1),
        "idle_p50_ms_by_stage": {
            stage: round(statistics.median(values), 1)
            for stage, values in idle.items()
            if stage != "total"
        },
        "worker": " ".join(WORKERS[args.worker]),
        "workers": args.workers,
        "duplicates": receiver.duplicates,
        # Committed but never received; delivered but not recorded as succeeded.
        "lost": counts["events"] - receiver.count(),
        "unsettled": counts["deliveries"] - counts["succeeded"],
        "retried": counts["attempts"] - counts["deliveries"],
        "counts": counts,
    }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def markdown(out: dict[str, Any], command: str, now: str) -> str:
    stages = out["idle_p50_ms_by_stage"]
    return "\n".join([
        f"### {out['setup']} — {now}",
        "",
        f"Machine: {out['machine']} (2 cores shared with other work). Worker: "
        f"`python -m {out['worker']}`{workers_note(out)}. Command: `{command}`.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| throughput, {out['events']} events committed at once → all received, median of "
        f"{out['bursts']} | {out['deliveries_per_s']} deliveries/s (each burst: "
        f"{', '.join(str(r) for r in out['deliveries_per_s_each_burst'])}; "
        f"target ≥ {TARGET_DELIVERIES_PER_S}) |",
        f"| end-to-end latency at idle, commit → receiver (n={out['idle_samples']}) | "
        f"p50 {out['idle_p50_ms']} ms, p99 {out['idle_p99_ms']} ms, max {out['idle_max_ms']} ms "
        f"(target p50 ≤ {TARGET_IDLE_P50_MS:g}) |",
        f"| idle p50 by stage: commit → dispatcher pass / pass → job's claim / claim → "
        f"arrival | {stages['wake']} / {stages['fan_out_to_job']} / {stages['job']} ms |",
        f"| CPU per delivery in the median burst: worker / dispatcher / receiver (the "
        f"benchmark's process) / PostgreSQL backends | {cpu_cell(out)} |",
        f"| duplicates seen by the receiver / events lost / deliveries not recorded as "
        f"succeeded / attempts retried | {out['duplicates']} / {out['lost']} / "
        f"{out['unsettled']} / {out['retried']} |",
    ])  # fmt: skip


def workers_note(out: dict[str, Any]) -> str:
    """How many worker processes ran, when more than one (`switchyard run` starts one)."""
    workers = out.get("workers", 1)
    if workers == 1:
        return ""
    return f", {workers} processes (`SWITCHYARD_WORKERS_WEBHOOKS={workers}`)"


def cpu_cell(out: dict[str, Any]) -> str:
    processes = [out[f"{p}_cpu_ms_per_delivery"] for p in ("worker", "dispatcher", "receiver")]
    database = out["database_cpu_ms_per_delivery"]
    cell = " / ".join(str(ms) for ms in processes)
    if database is None:
        return f"{cell} ms (SQLite runs inside these processes)"
    return f"{cell} / {database} ms"


def write_results(out: dict[str, Any], command: str, results: Path) -> None:
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    previous = read_section(HEADING, results) or f"{HEADING}\n\n{INTRO}\n"
    _, _, body = previous.partition("\n")
    section = replace_subsection(
        f"{HEADING} — {now}\n{body}", f"### {out['setup']}", markdown(out, command, now)
    )
    write_section(HEADING, "\n" + section, results)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", help="Default: DATABASE_URL, else a SQLite file.")
    parser.add_argument("--redis-url", help="Default: REDIS_URL, else an embedded Redis.")
    parser.add_argument("--events", type=int, default=3000, help="Events in a burst.")
    parser.add_argument("--repeat", type=int, default=3, help="Bursts (median, spread).")
    parser.add_argument(
        "--worker",
        choices=sorted(WORKERS),
        default="switchyard",
        help="switchyard: `switchyard worker --queues webhooks`; webhooks: the same worker "
        "through `python -m platform_api.tasks.webhooks`.",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Webhooks worker processes (as SWITCHYARD_WORKERS_WEBHOOKS=N starts them).",
    )
    parser.add_argument("--idle-samples", type=int, default=100, help="Events sent one by one.")
    parser.add_argument("--timeout", type=float, default=120.0, help="Longest wait (s).")
    parser.add_argument("--results", type=Path, default=RESULTS, help="Markdown file.")
    parser.add_argument("--no-write", action="store_true", help="Print only.")
    parser.add_argument("--logs", type=Path, default=None, help="Keep process logs here.")
    return parser.parse_args()


def main() -> None:
    from core.redis_url import stop_embedded_redis

    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    setup = resolve_setup(args, workdir)
    try:
        out = run(args, setup, workdir)
    finally:
        stop_embedded_redis()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(out, indent=2))
    if not args.no_write:
        command = " ".join(["python -m benchmarks.bench_webhooks", *sys.argv[1:]])
        write_results(out, command, args.results)


if __name__ == "__main__":
    main()
