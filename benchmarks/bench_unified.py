"""Unified API overhead: a unified list call vs. the same upstream call, 50 and 200 records.

Starts the sandbox upstream (250 orders) and the HTTP front (`uvicorn
switchyard.app:from_environment`) as separate processes on loopback, against a fresh SQLite
database and an embedded Redis, with one `sandbox` account. Then, for pages of 50 and of 200
records, interleaved, N times each:

* direct:  GET <sandbox>/store/orders?limit=N              (what the provider costs)
* unified: GET /v1/unified/wms/orders?limit=N&...          (auth, account lookup, ten steps,
                                                            JSONata mapping, schema check,
                                                            API-log write)

plus the ten steps in-process (no HTTP front, no DB) against the same upstream, and every
provider's record mapping alone on both JSONata engines. Reports p50/p99 of each and the
overhead (unified − direct) against the targets. ``--profile`` then serves the front again
with every stage of a call timed (``benchmarks/profiled_front.py``) and reports where a
50-record call's time goes, and what a connection-cache miss costs (account and installation
queries, credential decryption). Prints JSON and writes its own section of
benchmarks/RESULTS.md.

    python -m benchmarks.bench_unified --profile     # ~2 min
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
    RESULTS,
    create_token_and_sandbox_account,
    free_port,
    machine,
    percentile,
    process,
    wait_http,
    write_section,
)
from core.settings import get_settings

# Its heading in RESULTS.md, whole: the date is in the line below it.
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
    from platform_api.integrations.provider_access import auth_parts
    from platform_api.unified import engine, upstream
    from platform_api.unified.call import ProviderConnection, UnifiedCall
    from platform_api.unified.requests import UnifiedRequest
    from platform_api.unified.resource_map import get_resources

    integration = get_manifest("sandbox")
    conn = ProviderConnection(
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
            result = engine.as_python(await engine.run(call))
            elapsed = (time.perf_counter() - started) * 1000
            assert len(result["result"]) == 50
            if i >= 20:
                out.append(elapsed)
        await upstream.close_sessions()
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


# Targets (issue: unified API at wire speed).
TARGETS = {50: {"p50": 2.0, "p99": 8.0}, 200: {"p50": 6.0}}
TARGET_SHOPIFY_RECORDS_PER_S = 20_000
PAGE_SIZES = (50, 200)
SANDBOX_ORDERS = 250


def measure_pages(
    client: httpx.Client, sandbox_url: str, api_url: str, token: str, account_id: str, calls: int
) -> dict[int, dict[str, list[float]]]:
    """Direct and unified calls, interleaved, for each page size (after a warm-up)."""
    direct_headers = {"Authorization": "Bearer sk_sandbox_demo"}
    unified_headers = {"Authorization": f"Bearer {token}"}
    out: dict[int, dict[str, list[float]]] = {}
    for size in PAGE_SIZES:
        direct, unified = [], []
        for i in range(calls + 30):
            started = time.perf_counter()
            r = client.get(f"{sandbox_url}/store/orders", params={"limit": size},
                           headers=direct_headers)  # fmt: skip
            direct_ms = (time.perf_counter() - started) * 1000
            assert r.status_code == 200 and len(r.json()["data"]) == size, r.text
            started = time.perf_counter()
            r = client.get(f"{api_url}/v1/unified/wms/orders", headers=unified_headers,
                           params={"integrated_account_id": account_id, "limit": size})  # fmt: skip
            unified_ms = (time.perf_counter() - started) * 1000
            assert r.status_code == 200 and len(r.json()["result"]) == size, r.text
            if i >= 30:  # warm-up: imports, JSONata compilation, pools
                direct.append(direct_ms)
                unified.append(unified_ms)
        out[size] = {"direct": direct, "unified": unified}
        print(f"  {size} records: unified p50 {percentile(unified, 0.5):.2f} ms, "
              f"direct p50 {percentile(direct, 0.5):.2f} ms", file=sys.stderr)  # fmt: skip
    return out


def profile_front(
    env: dict[str, str], sandbox_url: str, token: str, account_id: str, calls: int
) -> dict[str, Any]:
    """Serve the front again with every stage timed; ms per 50-record call per stage."""
    from benchmarks.profiled_front import STAGES

    port = free_port()
    out = Path(tempfile.mkdtemp(prefix="bench-unified-profile-")) / "stages.json"
    argv = [sys.executable, "-m", "benchmarks.profiled_front", "--port", str(port),
            "--out", str(out)]  # fmt: skip
    params = {"integrated_account_id": account_id, "limit": 50}
    headers = {"Authorization": f"Bearer {token}"}
    with process(argv, env) as front, httpx.Client(timeout=30) as client:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc=front)
        for _ in range(calls):
            r = client.get(f"http://127.0.0.1:{port}/v1/unified/wms/orders", params=params,
                           headers=headers)  # fmt: skip
            assert r.status_code == 200, r.text
    totals = json.loads(out.read_text())
    requests, whole = totals["requests"], totals["seconds"]
    stages = totals["stages"]
    rows = [{"stage": label, "ms": round(1000 * stages[label] / requests, 3),
             "share": round(stages[label] / whole, 3)} for label, _, _ in STAGES]  # fmt: skip
    rest = whole - sum(stages.values())
    rows.append(
        {
            "stage": "HTTP parsing, routing, dependencies, middleware (the rest)",
            "ms": round(1000 * rest / requests, 3),
            "share": round(rest / whole, 3),
        }
    )
    rows.append({"stage": "whole call in the front", "ms": round(1000 * whole / requests, 3),
                 "share": 1.0})  # fmt: skip
    return {"calls": requests, "stages": rows, "cache_miss": cache_miss_cost(account_id)}


def cache_miss_cost(account_id: str, repeats: int = 200) -> dict[str, float]:
    """What a connection-cache miss costs: account and installation queries, decryption."""
    from platform_api.db import session_scope
    from platform_api.services import accounts
    from platform_api.services.provider_connection import open_connection

    settings = get_settings()
    lookups, decrypts = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        with session_scope(settings) as session:
            open_connection(session, settings, environment_id="development",
                            integrated_account_id=account_id)  # fmt: skip
        lookups.append((time.perf_counter() - started) * 1000)
        with session_scope(settings) as session:
            account = accounts.get_account(session, environment_id="development",
                                           integrated_account_id=account_id)  # fmt: skip
            started = time.perf_counter()
            accounts.get_credentials(account, settings)
            decrypts.append((time.perf_counter() - started) * 1000)
    return {"open_connection_p50_ms": round(percentile(lookups, 0.5), 3),
            "decrypt_p50_ms": round(percentile(decrypts, 0.5), 3)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="Measured calls of each kind.")
    parser.add_argument("--profile", action="store_true", help="Also time each stage.")
    parser.add_argument("--no-write", action="store_true", help="Do not update RESULTS.md.")
    args = parser.parse_args()

    from cryptography.fernet import Fernet

    from core.redis_url import start_embedded_redis, stop_embedded_redis
    from core.settings import Settings

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
    sandbox = [sys.executable, "-m", "sandbox", "--orders", str(SANDBOX_ORDERS)]
    profiled: dict[str, Any] | None = None
    try:
        with process(sandbox, env):
            wait_http(f"{sandbox_url}/health")
            with process(api, env), httpx.Client(timeout=30) as client:
                wait_http(f"http://127.0.0.1:{api_port}/healthz")
                pages = measure_pages(client, sandbox_url, f"http://127.0.0.1:{api_port}",
                                      token, account_id, args.calls)  # fmt: skip
            engine_only = engine_timings(sandbox_url, args.calls)
            if args.profile:
                profiled = profile_front(env, sandbox_url, token, account_id, args.calls)
        mappings = mapping_throughput()
    finally:
        stop_embedded_redis()
    report: dict[str, Any] = {
        "benchmark": "unified list call vs the sandbox upstream (wms/orders)",
        "machine": machine(),
        "command": "python -m benchmarks.bench_unified" + (" --profile" if args.profile else ""),
        "calls": args.calls,
        "pages": {},
        "engine_in_process_50": summary(engine_only),
        "mapping_records_per_s": mappings,
        "profile": profiled,
    }
    for size, runs in pages.items():
        direct, unified = runs["direct"], runs["unified"]
        report["pages"][size] = {
            "direct_upstream": summary(direct),
            "unified_api": summary(unified),
            "overhead_ms": {
                "p50": round(percentile(unified, 0.5) - percentile(direct, 0.5), 3),
                "p99": round(percentile(unified, 0.99) - percentile(direct, 0.99), 3),
            },
        }
    report["targets"] = check_targets(report)
    print(json.dumps(report, indent=2))
    if not args.no_write:
        write_results(report)


def check_targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for size, limits in TARGETS.items():
        overhead = report["pages"][size]["overhead_ms"]
        for quantile, limit in limits.items():
            rows.append(
                {
                    "target": f"{size} records: overhead {quantile} <= {limit} ms",
                    "measured": overhead[quantile],
                    "met": overhead[quantile] <= limit,
                }
            )
    shopify = next(m for m in report["mapping_records_per_s"] if m["mapping"] == "shopify orders")
    rows.append({"target": f"Shopify orders mapping >= {TARGET_SHOPIFY_RECORDS_PER_S:,} records/s "
                           "(one core)",
                 "measured": shopify["jsonatapy"],
                 "met": shopify["jsonatapy"] >= TARGET_SHOPIFY_RECORDS_PER_S})  # fmt: skip
    return rows


def _row(label: str, stats: dict[str, float]) -> str:
    return f"| {label} | {stats['p50_ms']} | {stats['p99_ms']} | {stats['mean_ms']} |"


def write_results(report: dict[str, Any]) -> None:
    """Replace this benchmark's own section of RESULTS.md (other sections are left alone)."""
    lines = [
        HEADING,
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {report['machine']}. Command: "
        f"`{report['command']}`; {report['calls']} calls of each kind per page size, one "
        "client, sequential, direct and unified interleaved, loopback, SQLite + embedded Redis.",
        "",
        "| path | p50 ms | p99 ms | mean ms |",
        "|---|---|---|---|",
    ]
    for size, page in report["pages"].items():
        lines += [
            _row(f"{size} records: sandbox upstream directly", page["direct_upstream"]),
            _row(f"{size} records: unified API", page["unified_api"]),
            f"| **{size} records: overhead (unified − direct)** | "
            f"**{page['overhead_ms']['p50']}** | **{page['overhead_ms']['p99']}** | |",
        ]
    lines += [
        _row("50 records: engine only, in-process (ten steps incl. the upstream call)",
             report["engine_in_process_50"]),
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *(f"| {t['target']} | {t['measured']:,} | {'yes' if t['met'] else 'NO'} |"
          for t in report["targets"]),
        "",
    ]  # fmt: skip
    if report["profile"]:
        prof = report["profile"]
        miss = prof["cache_miss"]
        lines += [
            f"Where a 50-record call's time goes in the front (`--profile`: {prof['calls']} "
            "calls to the front served by `benchmarks/profiled_front.py`, each stage's wall "
            "time summed and divided by the calls; timers add a little to every stage):",
            "",
            "| stage | ms per call | share |",
            "|---|---|---|",
            *(f"| {r['stage']} | {r['ms']} | {100 * r['share']:.0f}% |" for r in prof["stages"]),
            "",
            "The connection (account, installed integration, decrypted credentials) comes from "
            "the per-process cache; a miss, once per account and process every "
            "`SWITCHYARD_UNIFIED_CONNECTION_CACHE_S` seconds or after a change, costs "
            f"{miss['open_connection_p50_ms']} ms (p50: the queries and the decryption; the "
            f"decryption alone {miss['decrypt_p50_ms']} ms).",
            "",
        ]  # fmt: skip
    lines += [
        "Record mappings alone, one thread, records per second; the API maps with jsonatapy "
        "(Rust), jsonata-python is the reference every output is compared with:",
        "",
        "| mapping | jsonatapy | jsonata-python | speed-up |",
        "|---|---|---|---|",
        *(f"| {m['mapping']} | {m['jsonatapy']:,} | {m['jsonata-python']:,} | {m['speedup']}x |"
          for m in report["mapping_records_per_s"]),
        "",
    ]  # fmt: skip
    write_section(HEADING, "\n".join(lines), RESULTS)


if __name__ == "__main__":
    main()
