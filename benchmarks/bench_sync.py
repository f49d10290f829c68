"""Sync run throughput: 10,000 returns (100 per page) from the sandbox into the returns cache.

The sandbox upstream (seeded with --returns returns) runs in this process on loopback; one
`switchyard worker --burst` process executes the run, as in production, against a fresh
SQLite database and an embedded Redis. Each page goes through the unified engine, is logged,
written to the cache and reported as a `sync_job_run:record` event in the outbox. Reports
records per second (target >= 2,000) and the time per page, and appends to RESULTS.md.

    python -m benchmarks.bench_sync                 # ~1 minute
    python -m benchmarks.bench_sync --returns 2000  # a quicker look
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

from benchmarks.common import REPO, create_token_and_sandbox_account, machine, wait_http

TARGET_RECORDS_PER_S = 2_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--returns", type=int, default=10_000, help="Returns upstream.")
    parser.add_argument("--no-write", action="store_true", help="Do not update RESULTS.md.")
    args = parser.parse_args()

    from cryptography.fernet import Fernet

    from core.settings import Settings, get_settings
    from platform_api.redis_conn import start_embedded_redis, stop_embedded_redis
    from platform_api.sandbox.app import create_app as sandbox_app
    from platform_api.sandbox.data import seed
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
    finally:
        stop_embedded_redis()
    report["machine"] = machine()
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write_results(report)


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
    from platform_api.db import session_scope
    from platform_api.tables.sync import SyncJobRun

    with session_scope(settings) as session:  # the API shows whole seconds; the row has more
        row = session.get(SyncJobRun, run_id)
        assert row is not None and row.started_at and row.finished_at
        run_s = (row.finished_at - row.started_at).total_seconds()
    return {
        "benchmark": f"sync run of wms/returns, {returns} records, 100 per page, one worker",
        "records": stats["records"],
        "pages": stats["pages"],
        "run_seconds": round(run_s, 2),
        "records_per_s": round(stats["records"] / run_s),
        "ms_per_page": round(1000 * run_s / stats["pages"], 1),
        "worker_wall_seconds_incl_start": round(wall, 2),
        "target_records_per_s": TARGET_RECORDS_PER_S,
    }


def write_results(report: dict[str, Any]) -> None:
    met = report["records_per_s"] >= TARGET_RECORDS_PER_S
    section = "\n".join([
        f"\n## Sync run throughput — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {report['machine']}. Command: `python -m benchmarks.bench_sync`.",
        "",
        f"{report['benchmark']}: {report['records']} records in {report['pages']} pages, "
        f"{report['run_seconds']} s from start to finish of the run: "
        f"**{report['records_per_s']} records/s** ({report['ms_per_page']} ms per page; the "
        f"worker process took {report['worker_wall_seconds_incl_start']} s including its "
        f"start). Target >= {TARGET_RECORDS_PER_S} records/s: {'met' if met else 'NOT met'}.",
        "",
    ])  # fmt: skip
    with (REPO / "benchmarks" / "RESULTS.md").open("a") as f:
        f.write(section)


if __name__ == "__main__":
    main()
