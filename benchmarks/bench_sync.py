"""Sync run throughput: 10,000 returns (100 per page) from the sandbox into the returns cache.

The sandbox upstream (seeded with --returns returns) runs in this process on loopback;
`switchyard worker --burst` processes execute the runs, as in production. Each page goes
through the unified engine, is logged, written to the cache and reported as a
`sync_job_run:record` event in the outbox. Reports records per second (target >= 8,000 on
PostgreSQL for one run) and the time per page, and writes its setup's part of its section of
RESULTS.md (in place of the previous one; the other setups' parts stay).

    python -m benchmarks.bench_sync                 # SQLite + embedded Redis, ~30 s
    python -m benchmarks.bench_sync --returns 2000  # a quicker look
    python -m benchmarks.bench_sync \\
        --database-url postgresql://postgres@127.0.0.1:5432/bench_sync \\
        --redis-url redis://127.0.0.1:6379/6        # PostgreSQL + a Redis server
    python -m benchmarks.bench_sync ... --runs 4 --workers 2  # 4 accounts' runs at once

The database and Redis default to DATABASE_URL and REDIS_URL when set, else a fresh SQLite
file and an embedded Redis. Give it a database and a Redis database of its own: it migrates
the database, adds accounts and runs to it, and empties the Redis `sync` queue first.

Each measurement (one run, or --runs runs at once on as many accounts) is repeated --repeat
times on fresh accounts; the median and the spread are reported, with the CPU each process
spent per page (work horses, workers, the sandbox, a local PostgreSQL's server processes). With
``--profile`` the job then runs once more inside this process (a re-sync of the first account)
with each stage of a page timed (its own wall and CPU time, summed over the run), to say where
the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO,
    RESULTS,
    create_token_and_sandbox_account,
    machine,
    read_section,
    replace_subsection,
    wait_http,
    write_section,
)
from benchmarks.stage_timer import timed_stages

TARGET_RECORDS_PER_S = 8_000
PAGE_SIZE = 100


@dataclass(frozen=True)
class Setup:
    """Where the runs write: the database and the Redis, and how RESULTS.md names them."""

    database_url: str
    redis_url: str
    embedded_redis: bool

    @property
    def label(self) -> str:
        database = "PostgreSQL" if self.database_url.startswith("postgres") else "SQLite"
        return f"{database} + {'embedded Redis' if self.embedded_redis else 'Redis server'}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--returns", type=int, default=10_000, help="Returns upstream.")
    parser.add_argument("--database-url", help="Default: DATABASE_URL, else a SQLite file.")
    parser.add_argument("--redis-url", help="Default: REDIS_URL, else an embedded Redis.")
    parser.add_argument("--runs", type=int, default=1, help="Runs at once (one per account).")
    parser.add_argument("--workers", type=int, default=1, help="Sync worker processes.")
    parser.add_argument("--repeat", type=int, default=3, help="Measurements (median, spread).")
    parser.add_argument("--no-write", action="store_true", help="Do not update RESULTS.md.")
    parser.add_argument(
        "--profile", action="store_true", help="Also time each stage of a page, in-process."
    )
    return parser.parse_args()


def resolve_setup(args: argparse.Namespace, workdir: Path) -> Setup:
    from core.redis_url import start_embedded_redis
    from core.settings import Settings

    database_url = (
        args.database_url or os.environ.get("DATABASE_URL") or f"sqlite:///{workdir / 'bench.db'}"
    )
    redis_url = args.redis_url or os.environ.get("REDIS_URL")
    if redis_url:
        return Setup(database_url, redis_url, embedded_redis=False)
    return Setup(database_url, start_embedded_redis(Settings(var_dir=workdir)), True)


def main() -> None:
    args = parse_args()
    from cryptography.fernet import Fernet

    from core.redis_url import stop_embedded_redis
    from core.settings import get_settings
    from sandbox.app import create_app as sandbox_app
    from sandbox.data import seed
    from tests.conftest import ServerThread

    workdir = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    setup = resolve_setup(args, workdir)
    data = seed(returns=args.returns, orders=max(120, args.returns // 2))
    try:
        with ServerThread(sandbox_app(data)) as sandbox:
            os.environ.update({
                "SWITCHYARD_VAR_DIR": str(workdir),
                "DATABASE_URL": setup.database_url,
                "REDIS_URL": setup.redis_url,
                "SWITCHYARD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
                "SWITCHYARD_SANDBOX_URL": sandbox.url,
                "SWITCHYARD_LOG_LEVEL": "WARNING",
                "SWITCHYARD_OUTBOUND_ALLOWED_HOSTS": '["127.0.0.1"]',
                # Every run of a measurement is admitted at once (one environment).
                "SWITCHYARD_SYNC_MAX_RUNS_PER_ENVIRONMENT": str(max(4, args.runs)),
            })  # fmt: skip
            get_settings.cache_clear()
            wait_http(f"{sandbox.url}/health")
            report = measure(get_settings(), args)
            if args.profile:
                report["stages"] = profile(get_settings(), report)
            for private in ("token", "job_id", "account_id"):
                report.pop(private)
    finally:
        stop_embedded_redis()
    report["setup"] = setup.label
    report["machine"] = machine()
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write_results(report, command(sys.argv[1:]))


def command(argv: list[str]) -> str:
    return " ".join(["python -m benchmarks.bench_sync", *argv])


def empty_sync_queue(settings: Any) -> None:
    """Runs left queued by an interrupted benchmark would run inside this one's."""
    from platform_api.queueing.queues import SYNC, get_queue, get_redis

    get_queue(SYNC, get_redis(settings)).empty()


def measure(settings: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``--repeat`` batches of ``--runs`` runs (fresh accounts each), each batch executed by
    ``--workers`` burst workers; the median batch and the spread."""
    from fastapi.testclient import TestClient

    from switchyard.app import create_app

    token, _ = create_token_and_sandbox_account("bench-sync")
    empty_sync_queue(settings)
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(settings)) as client:
        job = client.post(
            "/v1/sync-job",
            json={"integration_name": "sandbox", "resources": [{"resource": "wms/returns"}]},
            headers=headers,
        ).json()
    batches = []
    for repetition in range(args.repeat):
        accounts = [new_account(settings, f"bench-sync-{time.time_ns()}-{i}")
                    for i in range(args.runs)]  # fmt: skip
        # The API app is closed before the workers start: its background tasks would count
        # as the sandbox's CPU.
        with TestClient(create_app(settings)) as client:
            run_ids = [start_run(client, headers, job["id"], account) for account in accounts]
        print(f"batch {repetition + 1}/{args.repeat}: {args.runs} run(s) of {args.returns} "
              f"returns, {args.workers} worker(s) ...", file=sys.stderr)  # fmt: skip
        with CpuMeter(settings) as cpu:
            wall = work(args.workers, cpu)
        report = batch_report(settings, run_ids, args.returns)
        cpu_ms = {k: round(v / report["pages"], 2) for k, v in cpu.ms.items()}
        batches.append({**report, "cpu_ms_per_page": cpu_ms, "worker_wall": wall,
                        "account_id": accounts[0]})  # fmt: skip
    median = sorted(batches, key=lambda b: b["records_per_s"])[len(batches) // 2]
    return {
        "benchmark": f"sync run of wms/returns, {args.returns} records, {PAGE_SIZE} per page",
        "runs_at_once": args.runs,
        "workers": args.workers,
        **{k: v for k, v in median.items() if k != "worker_wall"},
        "records_per_s_each_batch": [b["records_per_s"] for b in batches],
        "worker_wall_seconds_incl_start": round(median["worker_wall"], 2),
        "target_records_per_s": TARGET_RECORDS_PER_S,
        "job_id": job["id"],
        "token": token,
    }


def new_account(settings: Any, tenant: str) -> str:
    from platform_api.db import session_scope
    from platform_api.services import accounts
    from platform_api.services.installed_integrations import find_installed

    with session_scope(settings) as session:
        installed = find_installed(
            session, environment_id="development", integration_name="sandbox"
        )
        assert installed is not None
        account = accounts.create_account(
            session, installed=installed, tenant_id=tenant,
            credentials={"api_key": "sk_sandbox_demo"}, settings=settings,
        )  # fmt: skip
        return account.id


def start_run(client: Any, headers: dict[str, str], job_id: str, account: str) -> str:
    body = {"sync_job_id": job_id, "integrated_account_id": account}
    created = client.post("/v1/sync-job-run", json=body, headers=headers)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


class CpuMeter:
    """CPU milliseconds spent while the block runs, by whom: the work horses executing the
    runs, the worker processes around them (their start, RQ), this process (the sandbox
    serving the runs) and, on a local PostgreSQL, the database's server processes. The
    horses and the server processes are sampled from /proc every 50 ms (a horse's last
    milliseconds count as its worker's); the workers must have exited when the block ends."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.workers: list[subprocess.Popen] = []
        self.ms: dict[str, float] = {}
        # pid: (CPU seconds when first seen, when last seen), by group.
        self._seen: dict[str, dict[int, tuple[float, float]]] = {"horses": {}, "server": {}}
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample_until_stopped, daemon=True)
        self._sampling_cpu = 0.0  # the sampler's own CPU, not the sandbox's

    def __enter__(self) -> CpuMeter:
        self._children = _cpu_seconds(resource.getrusage(resource.RUSAGE_CHILDREN))
        self._own = time.process_time()
        self._sample(first=True)
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sampler.join()
        children = _cpu_seconds(resource.getrusage(resource.RUSAGE_CHILDREN)) - self._children
        horses, server = (sum(last - first for first, last in self._seen[group].values())
                          for group in ("horses", "server"))  # fmt: skip
        self.ms = {
            "work horses": 1000 * horses,
            "worker processes (start, RQ)": 1000 * (children - horses),
            "sandbox (this process)": 1000 * (time.process_time() - self._own - self._sampling_cpu),
        }
        if self.settings.resolved_database_url.startswith("postgres"):
            self.ms["PostgreSQL server"] = 1000 * server

    def _sample_until_stopped(self) -> None:
        started = time.thread_time()
        while not self._stop.wait(0.05):
            self._sample(first=False)
        self._sampling_cpu = time.thread_time() - started

    def _sample(self, *, first: bool) -> None:
        """Each watched process: its CPU when first seen (0 for one that started meanwhile:
        all of its CPU counts) and when last seen."""
        groups = {"horses": [pid for w in self.workers for pid in _children_of(w.pid)],
                  "server": self._server_pids()}  # fmt: skip
        for group, pids in groups.items():
            seen = self._seen[group]
            for pid in pids:
                seconds = _process_cpu_seconds(pid)
                if seconds is not None:
                    known = seen.get(pid)
                    seen[pid] = (known[0] if known else (seconds if first else 0.0), seconds)

    def _server_pids(self) -> list[int]:
        if not self.settings.resolved_database_url.startswith("postgres"):
            return []
        import sqlalchemy as sa

        from platform_api.db import get_engine

        with get_engine(self.settings).connect() as connection:
            return list(connection.execute(sa.text(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )).scalars())  # fmt: skip


def _cpu_seconds(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process from /proc (None: gone, or not visible from here)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_of(pid: int) -> list[int]:
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except OSError:
        return []


def work(workers: int, cpu: CpuMeter) -> float:
    """``workers`` burst workers on the sync queue until it is empty; their wall time."""
    argv = [sys.executable, "-m", "switchyard.cli", "worker", "--burst", "--queue", "sync"]
    started = time.perf_counter()
    cpu.workers = [subprocess.Popen(argv, cwd=REPO, env=dict(os.environ)) for _ in range(workers)]
    for proc in cpu.workers:
        if proc.wait() != 0:
            raise RuntimeError(f"a worker exited with {proc.returncode}")
    return time.perf_counter() - started


def batch_report(settings: Any, run_ids: list[str], returns: int) -> dict[str, Any]:
    """Records per second of a batch of runs, from the runs' own rows (start to finish, the
    workers' start excluded) and their page events' timestamps."""
    runs = [run_timing(settings, run_id, returns) for run_id in run_ids]
    span = (max(r["finished"] for r in runs) - min(r["started"] for r in runs)).total_seconds()
    records = sum(r["records"] for r in runs)
    pages = sum(r["pages"] for r in runs)
    report = {
        "records": records,
        "pages": pages,
        "run_seconds": round(span, 2),
        "records_per_s": round(records / span),
        "ms_per_page": round(1000 * span / pages, 1),
        "first_page_s": round(statistics.median(r["first_page_s"] for r in runs), 2),
        "steady_ms_per_page": round(statistics.median(r["steady_ms"] for r in runs), 1),
    }
    if len(runs) > 1:
        report["records_per_s_each_run"] = [round(r["records"] / r["seconds"]) for r in runs]
    return report


def run_timing(settings: Any, run_id: str, returns: int) -> dict[str, Any]:
    from sqlmodel import col, select

    from platform_api.db import session_scope
    from platform_api.tables.outbox import OutboxEvent
    from platform_api.tables.sync import SyncJobRun

    with session_scope(settings) as session:  # the API shows whole seconds; the row has more
        row = session.get(SyncJobRun, run_id)
        assert row is not None and row.status == "completed", row
        assert row.started_at and row.finished_at
        stats = row.resource_stats["wms/returns"]
        assert stats["records"] == returns, stats
        started, finished = utc(row.started_at), utc(row.finished_at)
        # Each page's event is stamped as the page is written: the first page carries the
        # one-time costs of a fresh work horse (connections, compiling the mappings).
        stamps = sorted(utc(e.created_at) for e in session.exec(
            select(OutboxEvent)
            .where(col(OutboxEvent.event_type) == "sync_job_run:record")
            .where(col(OutboxEvent.created_at) >= row.started_at)
        ).all() if e.payload.get("sync_job_run_id") == run_id)  # fmt: skip
    seconds = (finished - started).total_seconds()
    return {
        "started": started,
        "finished": finished,
        "seconds": seconds,
        "records": stats["records"],
        "pages": stats["pages"],
        "first_page_s": (stamps[0] - started).total_seconds(),
        "steady_ms": 1000 * (stamps[-1] - stamps[0]).total_seconds() / max(1, len(stamps) - 1),
    }


def utc(moment: datetime) -> datetime:
    """SQLite gives naive datetimes back; every stamp here is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


# What one page does, stage by stage: (label, module, function). A stage called inside
# another is subtracted from it (each row is the time spent in that stage itself).
STAGES = [
    ("account lookup and credentials", "platform_api.services.unified", "connection_for"),
    ("provider call (the returns page)", "platform_api.unified.engine", "call_upstream"),
    ("record mapping (JSONata)", "platform_api.unified.engine", "map_response"),
    ("SKU lookup call (after-step fetch)", "platform_api.unified.steps", "_fetch"),
    ("after-steps but the fetch (merge, log)", "platform_api.unified.engine", "run_after_steps"),
    ("schema check and envelope", "platform_api.unified.engine", "unified_response"),
    ("API-log row queued", "platform_api.services.api_log_writer", "ApiLogWriter.add"),
    # PostgreSQL: one statement (fence, cache rows, event), committed as it runs.
    (
        "page write in one statement (PostgreSQL)",
        "platform_api.sync.lease",
        "PageWriter._write_in_one_statement",
    ),
    # SQLite: three statements and the commit.
    ("lease fence (run row UPDATE; SQLite)", "platform_api.sync.lease", "fence"),
    ("cache upsert (100 rows; SQLite)", "platform_api.sync.cache", "upsert_returns"),
    ("page event into the outbox (SQLite)", "platform_api.sync.lease", "record_event"),
    ("dispatcher kick (Redis)", "platform_api.webhooks.kick", "kick"),
    ("commit", "sqlalchemy.orm", "Session.commit"),
]


def profile(settings: Any, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Run the job once more in this process with every stage timed; ms per page each."""
    import asyncio

    from fastapi.testclient import TestClient

    from platform_api.sync.runner import execute_run
    from switchyard.app import create_app

    headers = {"Authorization": f"Bearer {report['token']}"}
    with TestClient(create_app(settings)) as client:
        run_id = start_run(client, headers, report["job_id"], report["account_id"])
    empty_sync_queue(settings)  # it runs here, not in a worker
    print("profile: a re-sync in-process, every stage timed ...", file=sys.stderr)
    cpu: dict[str, float] = {}
    with timed_stages(STAGES, cpu) as totals:
        started, cpu_started = time.perf_counter(), time.thread_time()
        # Pages one after the other on this thread: the timers see only this thread's calls.
        status = asyncio.run(execute_run(settings, run_id, overlap=False))
        wall, cpu_all = time.perf_counter() - started, time.thread_time() - cpu_started
    assert status == "completed", status
    pages = report["pages"] // report["runs_at_once"]
    # Exclusive times: they add up, the rest is what no stage covers.
    measured = [(label, seconds, cpu[label]) for label, seconds in totals.items()]
    measured.append(("the rest (loop, sessions, run start and end)",
                     wall - sum(totals.values()), cpu_all - sum(cpu.values())))  # fmt: skip
    measured.append(("whole page, in-process", wall, cpu_all))
    return [{"stage": label, "ms_per_page": round(1000 * seconds / pages, 2),
             "cpu_ms_per_page": round(1000 * cpu_seconds / pages, 2),
             "share": round(seconds / wall, 3)}
            for label, seconds, cpu_seconds in measured]  # fmt: skip


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Sync run throughput"
INTRO = (
    "`benchmarks/bench_sync.py`: one part per setup (database + Redis, runs at once), each the "
    "latest result of that setup."
)


def subheading(report: dict[str, Any]) -> str:
    runs, workers = report["runs_at_once"], report["workers"]
    at_once = "one run" if runs == 1 else f"{runs} runs at once"
    return f"### {report['setup']}, {at_once}, {workers} worker{'s' if workers > 1 else ''}"


def spread(values: list[int]) -> str:
    return f"{min(values)}–{max(values)}" if len(values) > 1 else str(values[0])


def shape(report: dict[str, Any]) -> str:
    runs, workers = report["runs_at_once"], report["workers"]
    if runs == 1 and workers == 1:
        return "one run, one worker"
    return f"{runs} runs at once (as many accounts), {workers} workers"


def summary(report: dict[str, Any]) -> str:
    met = report["records_per_s"] >= TARGET_RECORDS_PER_S
    each = report["records_per_s_each_batch"]
    lines = [
        f"{report['benchmark']}, {shape(report)}; median of {len(each)} measurements: "
        f"{report['records']} records in {report['pages']} pages, {report['run_seconds']} s "
        f"from the first run's start to the last one's finish: "
        f"**{report['records_per_s']} records/s** (each measurement: {spread(each)} records/s; "
        f"{report['ms_per_page']} ms per page; the workers took "
        f"{report['worker_wall_seconds_incl_start']} s including their start). Target (one run "
        f"on PostgreSQL) >= {TARGET_RECORDS_PER_S} records/s: {'met' if met else 'NOT met'}."
    ]
    if "records_per_s_each_run" in report:
        lines.append(f"Each run on its own: {spread(report['records_per_s_each_run'])} "
                     "records/s (what one account's user sees).")  # fmt: skip
    lines.append(
        f"The first page came {report['first_page_s']} s after a run started (a fresh work "
        f"horse's one-time costs); the pages after it took {report['steady_ms_per_page']} ms "
        f"each (median run)."
    )
    return " ".join(lines)


def stage_table(stages: list[dict[str, Any]]) -> str:
    return "\n".join([
        "\nWhere a page's time goes (`--profile`: a re-sync of the same account run inside the "
        "benchmark's process, each stage's own wall time and its thread's CPU time, summed and "
        "divided by the pages; wall minus CPU is waiting: for the database, the provider, the "
        "CPU. The sandbox serves from the same process, so its answers share the GIL):\n",
        "| stage | wall ms per page | CPU ms per page | share of the wall time |",
        "|---|---|---|---|",
        *(f"| {r['stage']} | {r['ms_per_page']} | {r['cpu_ms_per_page']} | "
          f"{100 * r['share']:.0f}% |" for r in stages),
    ])  # fmt: skip


def cpu_line(cpu_ms: dict[str, float]) -> str:
    spent = ", ".join(f"{who} {ms} ms" for who, ms in cpu_ms.items())
    return f"CPU per page (median measurement): {spent}."


def write_results(report: dict[str, Any], argv: str, results: Path = RESULTS) -> None:
    """Replace this setup's part of the section (the other setups' parts, and any text
    before the first part, stay as they are)."""
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    part = "\n".join([
        f"{subheading(report)} — {now}",
        "",
        f"Machine: {report['machine']}. Command: `{argv}`.",
        "",
        summary(report),
        "",
        cpu_line(report["cpu_ms_per_page"]),
    ])  # fmt: skip
    if report.get("stages"):
        part += "\n" + stage_table(report["stages"])
    previous = read_section(HEADING, results) or f"{HEADING}\n\n{INTRO}\n"
    _, _, body = previous.partition("\n")
    section = replace_subsection(f"{HEADING} — {now}\n{body}", subheading(report), part)
    write_section(HEADING, "\n" + section, results)


if __name__ == "__main__":
    main()
