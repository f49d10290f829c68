"""Sync run throughput: 10,000 returns (100 per page) from the sandbox into the returns cache.

The sandbox upstream (seeded with --returns returns) runs in this process on loopback; one
`switchyard worker --burst` process executes the run, as in production, against a fresh
SQLite database and an embedded Redis. Each page goes through the unified engine, is logged,
written to the cache and reported as a `sync_job_run:record` event in the outbox. Reports
records per second (target >= 2,000) and the time per page, and writes its section of RESULTS.md
(in place of the previous one).

    python -m benchmarks.bench_sync                 # ~1 minute
    python -m benchmarks.bench_sync --returns 2000  # a quicker look

With ``--profile`` the job then runs once more inside this process with each stage of a page
timed (wall time per stage, summed over the run), to say where the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO,
    RESULTS,
    create_token_and_sandbox_account,
    machine,
    wait_http,
    write_section,
)
from benchmarks.stage_timer import timed_stages

TARGET_RECORDS_PER_S = 2_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--returns", type=int, default=10_000, help="Returns upstream.")
    parser.add_argument("--no-write", action="store_true", help="Do not update RESULTS.md.")
    parser.add_argument(
        "--profile", action="store_true", help="Also time each stage of a page, in-process."
    )
    args = parser.parse_args()

    from cryptography.fernet import Fernet

    from core.redis_url import start_embedded_redis, stop_embedded_redis
    from core.settings import Settings, get_settings
    from sandbox.app import create_app as sandbox_app
    from sandbox.data import seed
    from tests.conftest import ServerThread

    workdir = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    redis_url = start_embedded_redis(Settings(var_dir=workdir))
    data = seed(returns=args.returns, orders=max(120, args.returns // 2))
    try:
        with ServerThread(sandbox_app(data)) as sandbox:
            env = {
                "SWITCHYARD_VAR_DIR": str(workdir),
                "DATABASE_URL": f"sqlite:///{workdir / 'bench.db'}",
                "REDIS_URL": redis_url,
                "SWITCHYARD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
                "SWITCHYARD_SANDBOX_URL": sandbox.url,
                "SWITCHYARD_LOG_LEVEL": "WARNING",
                "SWITCHYARD_OUTBOUND_ALLOWED_HOSTS": '["127.0.0.1"]',
            }
            os.environ.update(env)
            get_settings.cache_clear()
            wait_http(f"{sandbox.url}/health")
            report = run(get_settings(), args.returns)
            if args.profile:
                report["stages"] = profile(get_settings(), report)
            for private in ("token", "job_id", "account_id"):
                report.pop(private)
    finally:
        stop_embedded_redis()
    report["machine"] = machine()
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write_results(report, " ".join(sys.argv[1:]))


def run(settings: Any, returns: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from switchyard.app import create_app

    token, account = create_token_and_sandbox_account("bench-sync")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(settings)) as client:
        job = client.post(
            "/v1/sync-job",
            json={"integration_name": "sandbox", "resources": [{"resource": "wms/returns"}]},
            headers=headers,
        ).json()
        created = client.post(
            "/v1/sync-job-run",
            json={"sync_job_id": job["id"], "integrated_account_id": account},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
    print(f"worker: run {run_id}, {returns} returns ...", file=sys.stderr)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "switchyard.cli", "worker", "--burst", "--queue", "sync"],
        cwd=REPO,
        env=dict(os.environ),
        check=True,
    )
    wall = time.perf_counter() - started
    with TestClient(create_app(settings)) as client:
        done = client.get(f"/v1/sync-job-run/{run_id}", headers=headers).json()
        cached = client.get(
            "/v1/unified_cache/returns",
            params={"integrated_account_id": account, "limit": 1},
            headers=headers,
        )
    assert done["status"] == "completed", done
    stats = done["resource_stats"]["wms/returns"]
    assert stats["records"] == returns, stats
    assert cached.status_code == 200
    from sqlmodel import col, select

    from platform_api.db import session_scope
    from platform_api.tables.common import as_utc
    from platform_api.tables.outbox import OutboxEvent
    from platform_api.tables.sync import SyncJobRun

    with session_scope(settings) as session:  # the API shows whole seconds; the row has more
        row = session.get(SyncJobRun, run_id)
        assert row is not None and row.started_at and row.finished_at
        run_s = (row.finished_at - row.started_at).total_seconds()
        # Each page's event is stamped as the page commits: the first page carries the
        # one-time costs of a fresh work horse (connections, compiling the mappings).
        stamps = [as_utc(e.created_at) for e in session.exec(
            select(OutboxEvent).where(col(OutboxEvent.event_type) == "sync_job_run:record")
            .order_by(col(OutboxEvent.created_at))
        ).all() if e.payload.get("sync_job_run_id") == run_id]  # fmt: skip
    first_page_s = (stamps[0] - as_utc(row.started_at)).total_seconds()
    steady_ms = 1000 * (stamps[-1] - stamps[0]).total_seconds() / max(1, len(stamps) - 1)
    return {
        "benchmark": f"sync run of wms/returns, {returns} records, 100 per page, one worker",
        "records": stats["records"],
        "pages": stats["pages"],
        "run_seconds": round(run_s, 2),
        "records_per_s": round(stats["records"] / run_s),
        "ms_per_page": round(1000 * run_s / stats["pages"], 1),
        "first_page_s": round(first_page_s, 2),
        "steady_ms_per_page": round(steady_ms, 1),
        "worker_wall_seconds_incl_start": round(wall, 2),
        "target_records_per_s": TARGET_RECORDS_PER_S,
        "job_id": done["sync_job_id"],
        "account_id": account,
        "token": token,
    }


# What one page does, stage by stage: (label, module, function); none runs inside another.
STAGES = [
    ("account lookup and credentials", "platform_api.services.unified", "connection_for"),
    ("provider call (the returns page)", "platform_api.unified.engine", "call_upstream"),
    ("record mapping (JSONata)", "platform_api.unified.engine", "map_response"),
    ("after-steps (SKU lookup call + merge)", "platform_api.unified.engine", "run_after_steps"),
    ("schema check and envelope", "platform_api.unified.engine", "unified_response"),
    ("API-log row queued", "platform_api.services.api_log_writer", "ApiLogWriter.add"),
    ("cache upsert (100 rows)", "platform_api.sync.cache", "upsert_returns"),
    ("page event into the outbox", "platform_api.sync.runner", "_Run.event"),
]


def profile(settings: Any, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Run the job once more in this process with every stage timed; ms per page each."""
    import asyncio

    from fastapi.testclient import TestClient

    from platform_api.sync.runner import execute_run
    from switchyard.app import create_app

    headers = {"Authorization": f"Bearer {report['token']}"}
    body = {"sync_job_id": report["job_id"], "integrated_account_id": report["account_id"]}
    with TestClient(create_app(settings)) as client:
        created = client.post("/v1/sync-job-run", json=body, headers=headers)
        assert created.status_code == 201, created.text
    print("profile: the same run in-process, every stage timed ...", file=sys.stderr)
    with timed_stages(STAGES) as totals:
        started = time.perf_counter()
        status = asyncio.run(execute_run(settings, created.json()["id"]))
        wall = time.perf_counter() - started
    assert status == "completed", status
    pages = report["pages"]
    rows = [{"stage": label, "ms_per_page": round(1000 * t / pages, 2),
             "share": round(t / wall, 3)} for label, t in totals.items()]  # fmt: skip
    rest = wall - sum(totals.values())  # the stages do not nest
    for label, seconds in (("the rest (commits, heartbeat, loop)", rest),
                           ("whole page, in-process", wall)):  # fmt: skip
        rows.append({"stage": label, "ms_per_page": round(1000 * seconds / pages, 2),
                     "share": round(seconds / wall, 3)})  # fmt: skip
    return rows


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Sync run throughput"


def write_results(report: dict[str, Any], argv: str = "") -> None:
    met = report["records_per_s"] >= TARGET_RECORDS_PER_S
    section = "\n".join([
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {report['machine']}. Command: "
        f"`{' '.join(['python -m benchmarks.bench_sync', argv]).strip()}`.",
        "",
        f"{report['benchmark']}: {report['records']} records in {report['pages']} pages, "
        f"{report['run_seconds']} s from start to finish of the run: "
        f"**{report['records_per_s']} records/s** ({report['ms_per_page']} ms per page; the "
        f"worker process took {report['worker_wall_seconds_incl_start']} s including its "
        f"start). Target >= {TARGET_RECORDS_PER_S} records/s: {'met' if met else 'NOT met'}. "
        f"The first page came {report['first_page_s']} s after the run started (a fresh work "
        f"horse's one-time costs); the pages after it took {report['steady_ms_per_page']} ms "
        f"each.",
        "",
    ])  # fmt: skip
    if report.get("stages"):
        section += "\n".join([
            "\nWhere a page's time goes (`--profile`: the same job run again inside the "
            "benchmark's process, each stage's wall time summed and divided by the pages; the "
            "sandbox serves from the same process, so its answers share the GIL):\n",
            "| stage | ms per page | share |", "|---|---|---|",
            *(f"| {r['stage']} | {r['ms_per_page']} | {100 * r['share']:.0f}% |"
              for r in report["stages"]),
            "",
        ])  # fmt: skip
    write_section(HEADING, section, RESULTS)


if __name__ == "__main__":
    main()
