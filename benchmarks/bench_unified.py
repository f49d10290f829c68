"""Unified API engine overhead: a unified list call of 50 records vs. the same upstream call.

Starts the sandbox upstream and the HTTP front (`uvicorn switchyard.app:from_environment`) as
separate processes on loopback, against a fresh SQLite database and an embedded Redis, with
one `sandbox` account. Then, interleaved, N times each:

* direct:  GET <sandbox>/store/orders?limit=50             (what the provider costs)
* unified: GET /v1/unified/wms/orders?limit=50&...         (auth, account lookup, ten steps,
                                                            JSONata mapping, schema check,
                                                            API-log write)
* engine:  the ten steps in-process (no HTTP front, no DB) against the same upstream

and reports p50/p99 of each and the overhead (unified − direct). Prints JSON and writes its
own section of benchmarks/RESULTS.md.

    python -m benchmarks.bench_unified              # ~1 min
    python -m benchmarks.bench_unified --calls 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import (
    REPO,
    create_token_and_sandbox_account,
    free_port,
    machine,
    percentile,
    process,
    wait_http,
)
from core.settings import get_settings

RESULTS = REPO / "benchmarks" / "RESULTS.md"
HEADING = "## Unified API engine overhead (bench_unified.py)"


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 0.5), 3),
        "p99_ms": round(percentile(values, 0.99), 3),
        "mean_ms": round(statistics.fmean(values), 3),
    }


def prepare(env: dict[str, str], sandbox_url: str) -> tuple[str, str]:
    """Migrate, create an API token and a sandbox account; returns (token, account id)."""
    os.environ.update(env)
    get_settings.cache_clear()
    return create_token_and_sandbox_account("bench", base_url=sandbox_url)


def engine_timings(sandbox_url: str, calls: int) -> list[float]:
    """The ten steps alone, in-process, against the same upstream."""
    from platform_api.integrations.catalog import get_manifest
    from platform_api.integrations.connection import auth_parts
    from platform_api.unified import engine
    from platform_api.unified.call import Connection, UnifiedCall
    from platform_api.unified.requests import UnifiedRequest
    from platform_api.unified.resource_map import get_resources

    integration = get_manifest("sandbox")
    conn = Connection(
        environment_id="development", integrated_account_id="acct_bench",
        integration=integration, resources=get_resources("sandbox"), base_url=sandbox_url,
        auth=auth_parts(integration, {"api_key": "sk_sandbox_demo"}),
    )  # fmt: skip
    request = UnifiedRequest(
        environment_id="development", integrated_account_id="acct_bench", category="wms",
        resource="orders", method="list", limit=50,
    )  # fmt: skip
    settings = get_settings()

    async def run() -> list[float]:
        out = []
        for i in range(calls + 20):
            call = UnifiedCall.start(settings, conn, request)
            started = time.perf_counter()
            result = await engine.run(call)
            elapsed = (time.perf_counter() - started) * 1000
            assert len(result["result"]) == 50
            if i >= 20:
                out.append(elapsed)
        return out

    return asyncio.run(run())


def mapping_throughput(min_seconds: float = 0.5) -> list[dict[str, Any]]:
    """Records mapped per second on one thread by each engine, for every provider's record
    mapping over its fake provider's records (the test suite's fakes: the same data the
    parity test compares the engines on)."""
    from platform_api.unified.expressions import compile_expression
    from platform_api.unified.resource_map import get_resources
    from tests.platform_api.unified.providers import PROVIDERS
    from tests.platform_api.unified.replay import connection, make_call

    settings = get_settings()
    rows = []
    for provider in PROVIDERS:
        for resource in provider.resources:
            resources = get_resources(provider.integration)
            assert resources is not None
            mapping = resources.resources[resource].record
            assert mapping is not None
            expression = compile_expression(mapping)
            conn = connection(provider.integration, provider.credentials, "http://127.0.0.1:9")
            call = make_call(settings, conn, {"resource": resource, "method": "list"})
            bindings = call.bindings()
            records = provider.raw(provider.build(), resource)
            row: dict[str, Any] = {"mapping": f"{provider.integration} {resource}"}
            for name, run in (("jsonatapy", expression.evaluate_rust),
                              ("jsonata-python", expression.evaluate_python)):  # fmt: skip
                done, started = 0, time.perf_counter()
                while time.perf_counter() - started < min_seconds:
                    for record in records:
                        run(record, bindings)
                    done += len(records)
                row[name] = round(done / (time.perf_counter() - started))
            row["speedup"] = round(row["jsonatapy"] / row["jsonata-python"], 1)
            rows.append(row)
            print(f"  {row}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="Measured calls of each kind.")
    parser.add_argument("--no-write", action="store_true", help="Do not update RESULTS.md.")
    args = parser.parse_args()

    from cryptography.fernet import Fernet

    from core.settings import Settings
    from platform_api.redis_conn import start_embedded_redis, stop_embedded_redis

    workdir = Path(tempfile.mkdtemp(prefix="bench-unified-"))
    redis_url = start_embedded_redis(Settings(var_dir=workdir))
    api_port, sandbox_port = free_port(), free_port()
    sandbox_url = f"http://127.0.0.1:{sandbox_port}"
    env = {
        **os.environ,
        "SWITCHYARD_VAR_DIR": str(workdir),
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.db'}",
        "REDIS_URL": redis_url,
        "SWITCHYARD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "SWITCHYARD_SANDBOX_PORT": str(sandbox_port),
        "SWITCHYARD_LOG_LEVEL": "WARNING",
    }
    token, account_id = prepare(env, sandbox_url)
    api = [sys.executable, "-m", "uvicorn", "switchyard.app:from_environment", "--factory",
           "--host", "127.0.0.1", "--port", str(api_port), "--no-access-log",
           "--log-level", "warning"]  # fmt: skip
    try:
        with (
            process([sys.executable, "-m", "platform_api.sandbox"], env),
            process(api, env),
        ):
            wait_http(f"{sandbox_url}/health")
            wait_http(f"http://127.0.0.1:{api_port}/healthz")
            direct_url = f"{sandbox_url}/store/orders"
            unified_url = f"http://127.0.0.1:{api_port}/v1/unified/wms/orders"
            direct_headers = {"Authorization": "Bearer sk_sandbox_demo"}
            unified_headers = {"Authorization": f"Bearer {token}"}
            unified_params = {"integrated_account_id": account_id, "limit": 50}
            direct, unified = [], []
            with httpx.Client(timeout=30) as client:
                for i in range(args.calls + 30):
                    started = time.perf_counter()
                    r = client.get(direct_url, params={"limit": 50}, headers=direct_headers)
                    direct_ms = (time.perf_counter() - started) * 1000
                    assert r.status_code == 200 and len(r.json()["data"]) == 50
                    started = time.perf_counter()
                    r = client.get(unified_url, params=unified_params, headers=unified_headers)
                    unified_ms = (time.perf_counter() - started) * 1000
                    assert r.status_code == 200 and len(r.json()["result"]) == 50, r.text
                    if i >= 30:  # warm-up: imports, JSONata compilation, pools
                        direct.append(direct_ms)
                        unified.append(unified_ms)
            engine_only = engine_timings(sandbox_url, args.calls)
        mappings = mapping_throughput()
    finally:
        stop_embedded_redis()
    report: dict[str, Any] = {
        "benchmark": "unified list call, 50 records (sandbox wms/orders)",
        "machine": machine(),
        "calls": args.calls,
        "direct_upstream": summary(direct),
        "unified_api": summary(unified),
        "engine_in_process": summary(engine_only),
        "mapping_records_per_s": mappings,
        "overhead_ms": {
            "p50": round(percentile(unified, 0.5) - percentile(direct, 0.5), 3),
            "p99": round(percentile(unified, 0.99) - percentile(direct, 0.99), 3),
        },
    }
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write_results(report)


def _row(label: str, stats: dict[str, float]) -> str:
    return f"| {label} | {stats['p50_ms']} | {stats['p99_ms']} | {stats['mean_ms']} |"


def write_results(report: dict[str, Any]) -> None:
    """Replace this benchmark's own section of RESULTS.md (other sections are left alone)."""
    d, u, e, o = (report["direct_upstream"], report["unified_api"], report["engine_in_process"],
                  report["overhead_ms"])  # fmt: skip
    section = "\n".join([
        HEADING,
        "",
        f"{time.strftime('%Y-%m-%d')}, {report['machine']}; {report['calls']} sequential calls "
        "of each kind, one client, loopback, SQLite + embedded Redis.",
        "",
        "| path | p50 ms | p99 ms | mean ms |",
        "|---|---|---|---|",
        _row("sandbox upstream directly (`/store/orders?limit=50`)", d),
        _row("unified API (`/v1/unified/wms/orders?limit=50`)", u),
        _row("engine only, in-process (ten steps incl. the upstream call)", e),
        "",
        f"Overhead of the unified API over the direct call: **p50 {o['p50']} ms, "
        f"p99 {o['p99']} ms** "
        "(HTTP front, token check, account lookup and credential decryption, JSONata mapping of "
        "50 records, schema validation, API-log write).",
        "",
        "Record mappings alone, one thread, records per second (target: >= 20,000 for "
        "Shopify orders); the API maps with jsonatapy, jsonata-python is the reference:",
        "",
        "| mapping | jsonatapy | jsonata-python | speed-up |",
        "|---|---|---|---|",
        *(f"| {m['mapping']} | {m['jsonatapy']:,} | {m['jsonata-python']:,} | {m['speedup']}x |"
          for m in report["mapping_records_per_s"]),
        "",
    ])  # fmt: skip
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    if HEADING in text:
        start = text.index(HEADING)
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + ("\n" + text[end + 1 :] if end != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
