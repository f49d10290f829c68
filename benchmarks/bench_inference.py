"""Inference throughput and latency, all in one run on this machine, loopback only.

Measures (1) the raw ONNX Runtime ceiling of the shipped model (no HTTP, best batch size),
(2) a naive baseline server (FastAPI + transformers pipeline, torch fp32, one call at a time),
(3) the service as `switchyard run` starts it (uvicorn front -> Ray Serve deployment), (4) the
front's CPU per request rung by rung (`benchmarks/paced_front.py`), and (5) the topology
candidates the choice was made from. Prints JSON, writes its section of
benchmarks/RESULTS.md (in place of the previous one) and a latency plot.

    python -m benchmarks.bench_inference            # ~9 minutes
    python -m benchmarks.bench_inference --quick    # ~5 minutes, no candidates
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, RESULTS, free_port, machine, process, wait_http, write_section
from benchmarks.cpu_split import SERVICE_GROUPS, CpuSplit, service_grouping, service_ms
from benchmarks.loadgen import load

# Concurrency levels of the curve (single endpoint); 1 and --clients are measured anyway.
CURVE_CLIENTS = (1, 8, 32, 64, 128)

# Short support messages like the traffic the service is built for (~10-20 tokens).
MESSAGES = [
    "Where is my order? It still hasn't arrived.",
    "Can you tell me the tracking status of my package?",
    "Please cancel my order, I don't want it anymore.",
    "I need to cancel the order I placed this morning.",
    "I want to return the shoes I bought, they don't fit.",
    "How do I send back an item I received?",
    "I want my money back for this order.",
    "When will I receive the refund for my returned item?",
    "Is this laptop available in silver?",
    "What sizes does this dress come in?",
    "I need to change the shipping address on my order.",
    "Please update my delivery address to 12 Oak Street.",
    "My credit card was declined at checkout.",
    "I was charged twice for the same order.",
    "This is the worst service I have ever had.",
    "The product arrived broken and nobody answers my emails.",
    "Thank you so much, your support team was amazing!",
    "Great service, the delivery was super fast.",
    "Do you have a job opening in marketing?",
    "hi, quick question about order 88123, has it shipped yet?",
    "the package says delivered but it's not at my door",
    "can i swap the blue one for a red one instead",
    "refund still not showing on my card after 10 days",
    "wrong item in the box, i ordered a medium",
]


@dataclass
class BenchArgs:
    duration_s: float = field(default=8.0, metadata={"help": "Seconds of load per measurement."})
    warmup_s: float = field(default=2.0, metadata={"help": "Seconds of load before measuring."})
    clients: int = field(default=32, metadata={"help": "Concurrent clients, single endpoint."})
    batch_clients: int = field(default=4, metadata={"help": "Concurrent clients, batch endpoint."})
    batch_messages: int = field(default=100, metadata={"help": "Messages per batch request."})
    raw_seconds: float = field(default=1.5, metadata={"help": "Seconds per raw batch size."})
    baseline_threads: int = field(
        default=1, metadata={"help": "torch threads of the baseline (0: torch's default)."}
    )
    rounds: int = field(
        default=3,
        metadata={
            "help": "Rounds of the 1- and --clients measurements, service and floor "
            "taking turns; medians are reported (the host's speed drifts)."
        },
    )
    quick: bool = field(default=False, metadata={"help": "Skip the topology candidates."})
    results: Path = field(default=RESULTS, metadata={"help": "Markdown whose section to replace."})
    plot: Path = field(
        default=REPO / "benchmarks" / "inference_latency.png",
        metadata={"help": "Latency plot to write."},
    )
    curve_plot: Path = field(
        default=REPO / "benchmarks" / "inference_curve.png",
        metadata={"help": "Throughput and latency against concurrency, plot to write."},
    )


def parse_args() -> BenchArgs:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in dataclasses.fields(BenchArgs):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            parser.add_argument(flag, action="store_true", help=f.metadata["help"])
        else:
            kind = {"float": float, "int": int, "Path": Path}[str(f.type)]
            parser.add_argument(flag, type=kind, default=f.default, help=f.metadata["help"])
    return BenchArgs(**vars(parser.parse_args()))


# -- raw ceiling --------------------------------------------------------------------------


def english_dir(model_dir: Path) -> Path:
    """The one-model directory English messages reach: a routed version's English route."""
    from intent.model_store import read_card
    from intent.routed import ENGLISH_ROUTE, is_routed, route_dirs

    if is_routed(read_card(model_dir)):
        return route_dirs(model_dir)[ENGLISH_ROUTE]
    return model_dir


def raw_ceiling(model_dir: Path, seconds: float) -> dict[str, Any]:
    """Messages/s of the model alone (tokenize + ORT run): best thread setup and batch size.
    A routed version runs as served: the language check, then its routes."""
    from intent.routed import open_model
    from intent.text_format import format_input

    pairs = [format_input(m) for m in MESSAGES]
    setups = {"1 thread": (1, True), "2 threads": (2, True), "2 threads, no spinning": (2, False)}
    table: dict[str, dict[int, float]] = {}
    for name, (threads, spinning) in setups.items():
        model = open_model(model_dir, intra_op_threads=threads, allow_spinning=spinning)
        table[name] = {}
        for size in (1, 8, 32, 64, 100):
            batch = (pairs * (size // len(pairs) + 1))[:size]
            model.predict(batch)
            done, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                model.predict(batch)
                done += size
            table[name][size] = round(done / (time.perf_counter() - started), 1)
    best_setup, best_size = max(
        ((name, size) for name in table for size in table[name]),
        key=lambda key: table[key[0]][key[1]],
    )
    return {
        "messages_per_s": table[best_setup][best_size],
        "best_batch_size": best_size,
        "best_setup": best_setup,
        "by_setup_and_batch_size": table,
    }


HISTORY = [
    {"role": "customer", "text": "I ordered a blue rain jacket last week and it has not shipped."},
    {"role": "agent", "text": "Sorry about that! Could you share the order number and email?"},
]


def grouped_runs(model_dir: Path, seconds: float) -> list[dict[str, Any]]:
    """Padded single run vs length-grouped runs (``intent.runner.plan_runs``), one thread; of
    a routed version, its English route (the messages are English)."""
    from intent.runner import IntentModel
    from intent.text_format import format_input

    model = IntentModel(english_dir(model_dir), intra_op_threads=1)
    short = [format_input(m) for m in MESSAGES]
    batches = {
        "32 short messages": (short * 2)[:32],
        "31 short messages + 1 with history": (short * 2)[:31] + [format_input("yes", HISTORY)],
    }

    def padded(pairs: list[Any]) -> None:
        model._session.run(["logits"], model.encode(pairs))

    rows = []
    for name, pairs in batches.items():
        row: dict[str, Any] = {"batch": name}
        for label, run in (("one padded run", padded), ("length-grouped runs", model.logits)):
            run(pairs)
            done, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                run(pairs)
                done += len(pairs)
            row[label] = round(done / (time.perf_counter() - started), 1)
        rows.append(row)
    return rows


# -- load generation (benchmarks/loadgen.py) ---------------------------------------------


def single_body(i: int) -> dict[str, Any]:
    return {"message": MESSAGES[i % len(MESSAGES)]}


def batch_body(size: int) -> Callable[[int], dict[str, Any]]:
    def make(i: int) -> dict[str, Any]:
        return {
            "messages": [
                {"id": str(j), "message": MESSAGES[(i + j) % len(MESSAGES)]} for j in range(size)
            ]
        }

    return make


# -- the service --------------------------------------------------------------------------


class Service:
    """Ray + the Serve application + the uvicorn front, as `switchyard run` arranges them."""

    def __init__(self, var_dir: Path) -> None:
        from core.settings import get_settings

        self.var_dir = var_dir
        os.environ.update(
            {
                "SWITCHYARD_VAR_DIR": str(var_dir),
                "DATABASE_URL": f"sqlite:///{var_dir / 'bench.db'}",
                "SWITCHYARD_LOG_LEVEL": "WARNING",
                # The limiter stays on (its Redis round trip is in every request), out of reach.
                "SWITCHYARD_INFERENCE_RATE_LIMIT_PER_MINUTE": "100000000",
            }
        )
        get_settings.cache_clear()
        self.settings = get_settings()
        self.env = dict(os.environ)
        self.headers: dict[str, str] = {}
        self.front_pid = 0
        self.front_pids: dict[str, int] = {}  # base URL -> front process

    def start(self) -> None:
        import ray

        from core.redis_url import start_embedded_redis
        from platform_api.db import migrate, session_scope
        from platform_api.services.tokens import create_token

        self.env["REDIS_URL"] = self.settings.redis_url or start_embedded_redis(self.settings)
        self.settings = self.settings.model_copy(update={"redis_url": self.env["REDIS_URL"]})
        migrate(self.settings)
        with session_scope(self.settings) as session:
            _, secret = create_token(session, environment="development", name="bench")
        self.headers = {"Authorization": f"Bearer {secret}"}
        ray.init(
            num_cpus=os.cpu_count(),
            include_dashboard=False,
            logging_level="WARNING",
            log_to_driver=False,  # stdout carries the JSON result
        )
        self.env["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
        self.deploy()

    def deploy(self, edit: Callable[[dict[str, Any]], None] | None = None, **overrides: Any) -> str:
        """Deploy the Serve config with settings ``overrides``; ``edit`` changes the config's
        classifier entry in place first."""
        from serving.rollout import classifier_deployment_config, deploy, serve_config_for

        config = serve_config_for(self.settings.model_copy(update=overrides))
        if edit is not None:
            edit(classifier_deployment_config(config))
        return deploy(config)

    @contextlib.contextmanager
    def front(self, app: str = "switchyard.app:from_environment", **env: str) -> Iterator[str]:
        """A front process serving ``app`` (a factory) with the settings of ``switchyard run``."""
        port = free_port()
        argv = [
            sys.executable, "-m", "uvicorn", app, "--factory",
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
            "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
        with process(argv, {**self.env, **env}) as proc:
            self.front_pid = proc.pid
            base = f"http://127.0.0.1:{port}"
            self.front_pids[base] = proc.pid
            wait_http(f"{base}/healthz", proc=proc)
            wait_http(f"{base}/readyz", proc=proc)
            yield base

    def stop(self) -> None:
        import ray
        from ray import serve

        from core.redis_url import stop_embedded_redis

        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()
        stop_embedded_redis()


def _replicas_cpu_s() -> float:
    """CPU seconds used so far by every Serve replica process on this machine."""
    found = subprocess.run(["pgrep", "-f", "ray::ServeReplica"], capture_output=True, text=True)
    total = 0
    for pid in found.stdout.split():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def transport_costs(app_name: str, calls: int = 400, concurrency: int = 4) -> list[dict[str, Any]]:
    """CPU per deployment-handle call (caller and replicas), actor-task vs gRPC transport.

    The call is ``model_version`` (no model run), so this is the price of the hop itself.
    """
    from ray import serve

    from serving.protocol import DEPLOYMENT_NAME

    base = serve.get_deployment_handle(DEPLOYMENT_NAME, app_name=app_name)
    transports = {
        "actor task (Ray's default)": base,
        "gRPC (_by_reference=False; shipped)": base.options(_by_reference=False),
    }
    rows = []
    for name, handle in transports.items():

        async def measure(name: str = name, handle: Any = handle) -> dict[str, Any]:
            async def worker(n: int) -> None:
                for _ in range(n):
                    await handle.model_version.remote()

            await worker(50)  # warm up the router and connections
            usage, replicas = resource.getrusage(resource.RUSAGE_SELF), _replicas_cpu_s()
            started = time.perf_counter()
            await asyncio.gather(*(worker(calls // concurrency) for _ in range(concurrency)))
            elapsed = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_SELF)
            caller = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
            return {
                "transport": name,
                "calls_per_s": round(calls / elapsed, 1),
                "caller_cpu_ms_per_call": round(1000 * caller / calls, 2),
                "replica_cpu_ms_per_call": round(1000 * (_replicas_cpu_s() - replicas) / calls, 2),
            }

        rows.append(asyncio.run(measure()))
    return rows


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "latencies_ms"}


def run(args: BenchArgs) -> dict[str, Any]:
    from core.settings import get_settings
    from intent.runner import resolve_model_dir

    settings = get_settings()
    model_dir = Path(settings.model_dir or resolve_model_dir(settings.models_root)).resolve()
    out: dict[str, Any] = {"machine": machine(), "model_dir": str(model_dir), "args": {}}
    out["args"] = {k: str(v) for k, v in dataclasses.asdict(args).items()}
    batch = "/v1/inference/intent-classify/batch"
    timing = {"duration_s": args.duration_s, "warmup_s": args.warmup_s}
    curves: dict[str, list[float]] = {}

    print("raw ONNX Runtime ceiling ...", file=sys.stderr)
    out["raw_ceiling"] = raw_ceiling(model_dir, args.raw_seconds)
    out["grouped_runs"] = grouped_runs(model_dir, args.raw_seconds)

    print("baseline server ...", file=sys.stderr)
    port = free_port()
    argv = [sys.executable, "-m", "benchmarks.baseline_server", "--port", str(port)]
    # One torch thread: on this shared 2-core machine torch's default (2) collapses as soon
    # as another process holds a core, and the baseline should be its best self.
    labels = english_dir(model_dir) / "labels.json"
    argv += ["--labels", str(labels), "--threads", str(args.baseline_threads)]
    with process(argv, dict(os.environ)) as proc:
        wait_http(f"http://127.0.0.1:{port}/docs", proc=proc)
        result = load(
            f"http://127.0.0.1:{port}/classify", single_body, clients=args.clients,
            headers={}, **timing,
        )  # fmt: skip
    curves["baseline (torch fp32 pipeline)"] = result["latencies_ms"]
    out["baseline"] = _summary(result)

    with tempfile.TemporaryDirectory(prefix="switchyard-bench-") as tmp:
        service = Service(Path(tmp))
        try:
            print("service (Ray Serve) ...", file=sys.stderr)
            service.start()
            out["transport_costs"] = transport_costs(service.settings.serve_app_name)
            with service.front() as base, floor_front(service) as floor_base:
                out["rounds"] = measure_rounds(base, floor_base, service, args, timing, curves)
                out["service_single"] = _median_round(out["rounds"], "service", args.clients)
                out["service_single_1_client"] = _median_round(out["rounds"], "service", 1)
                out["floor"] = {
                    "1_client": _median_round(out["rounds"], "floor", 1),
                    f"{args.clients}_clients": _median_round(out["rounds"], "floor", args.clients),
                }
                split = CpuSplit(
                    service_grouping(service.front_pid, service.settings.serve_app_name)
                )
                result = load(
                    base + batch, batch_body(args.batch_messages), clients=args.batch_clients,
                    headers=service.headers, on_measure_start=split.start,
                    on_measure_stop=split.stop, **timing,
                )  # fmt: skip
                out["service_batch"] = _summary(result)
                out["service_batch"]["messages_per_s"] = round(
                    result["requests_per_s"] * args.batch_messages, 1
                )
                out["service_batch"]["cpu_ms_per_message"] = _per(
                    split, max(result["requests"], 1) * args.batch_messages
                )
                out["curve"] = concurrency_curve(base, service, args, timing, out)
                out["front_ladder"] = front_ladder(base, service, args, timing, out)
            if not args.quick:
                out["candidates"] = candidates(service, args, timing, curves)
        finally:
            service.stop()

    out["targets"] = targets(out)
    plot(curves, args.plot, args.clients)
    plot_curve(out, args.curve_plot)
    return out


def concurrency_curve(
    base: str, service: Service, args: BenchArgs, timing: dict[str, float], out: dict[str, Any]
) -> list[dict[str, Any]]:
    """The single endpoint at each level of CURVE_CLIENTS (reusing 1 and --clients)."""
    measured = {1: out["service_single_1_client"], args.clients: out["service_single"]}
    rows = []
    for clients in sorted({*CURVE_CLIENTS, args.clients}):
        if clients not in measured:
            print(f"curve: {clients} clients ...", file=sys.stderr)
            result = load(
                base + "/v1/inference/intent-classify", single_body, clients=clients,
                headers=service.headers, **timing,
            )  # fmt: skip
            measured[clients] = _summary(result)
        rows.append({"clients": clients, **measured[clients]})
    return rows


def _calls_and_messages(base: str) -> tuple[float, float]:
    """Model calls the front at ``base`` made so far, and the messages they carried."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    found = {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "switchyard_inference_batch_size"
        for sample in family.samples
        if sample.name.endswith(("_count", "_sum"))
    }
    return (
        found.get("switchyard_inference_batch_size_count", 0.0),
        found.get("switchyard_inference_batch_size_sum", 0.0),
    )


def _is_pid(wanted: int, pid: int, _command: str) -> bool:
    return pid == wanted


def front_ladder(
    base: str, service: Service, args: BenchArgs, timing: dict[str, float], out: dict[str, Any]
) -> list[dict[str, Any]]:
    """The front's CPU per single request at ``--clients``, rung by rung: a bare ASGI app and
    the service's app, each with the model replaced by an in-process stand-in that takes the
    model's time (``benchmarks/paced_front.py``), then the shipped front (+ the handle call)."""
    by_batch = out["raw_ceiling"]["by_setup_and_batch_size"]["1 thread"]
    rate = {int(size): speed for size, speed in by_batch.items()}[8]
    pace_ms = round(1000 / rate, 2)  # one replica thread, groups of about 8 messages
    rungs = [
        ("bare ASGI app on uvicorn, model paced in-process", "benchmarks.paced_front:bare_app"),
        ("the service's app, model paced in-process", "benchmarks.paced_front:service_app"),
        ("the shipped front (deployment-handle call to the model)", None),
    ]
    rows = []
    for name, app in rungs:
        print(f"front ladder: {name} ...", file=sys.stderr)
        with contextlib.ExitStack() as stack:
            if app is None:
                url = base
            else:
                paced = {"SWITCHYARD_BENCH_MS_PER_MESSAGE": str(pace_ms)}
                url = stack.enter_context(service.front(app, **paced))
            split = CpuSplit([("front", partial(_is_pid, service.front_pids[url]))])
            calls, messages = _calls_and_messages(url)
            result = load(
                url + "/v1/inference/intent-classify", single_body, clients=args.clients,
                headers=service.headers, on_measure_start=split.start,
                on_measure_stop=split.stop, **timing,
            )  # fmt: skip
            calls_after, messages_after = _calls_and_messages(url)
        rows.append(
            {
                "rung": name,
                **_summary(result),
                "messages_per_call": round(
                    (messages_after - messages) / max(calls_after - calls, 1), 1
                ),
                "front_cpu_ms": _per(split, max(result["requests"], 1))["front"],
            }
        )
    return rows


@contextlib.contextmanager
def floor_front(service: Service) -> Iterator[str]:
    """A second front calling a no-op deployment the way the front calls the model: what Ray
    and the front cost with a free model (benchmarks/ray_floor.py)."""
    from benchmarks.ray_floor import APP_NAME, deploy_floor, remove_floor
    from serving.rollout import classifier_deployment_config, load_serve_config

    deploy_floor(classifier_deployment_config(load_serve_config()))
    try:
        with service.front(SWITCHYARD_SERVE_APP_NAME=APP_NAME) as base:
            yield base
    finally:
        remove_floor()


def measure_rounds(
    base: str,
    floor_base: str,
    service: Service,
    args: BenchArgs,
    timing: dict[str, float],
    curves: dict[str, list[float]],
) -> list[dict[str, Any]]:
    """``args.rounds`` rounds of the single endpoint at 1 and ``args.clients`` clients, the
    service and the floor taking turns, so a drift of the host's speed hits both alike."""
    from benchmarks.ray_floor import APP_NAME as FLOOR_APP

    single = "/v1/inference/intent-classify"
    apps = {"service": service.settings.serve_app_name, "floor": FLOOR_APP}
    rows = []
    for number in range(1, args.rounds + 1):
        for target, url in (("service", base), ("floor", floor_base)):
            for clients in (1, args.clients):
                print(f"round {number}: {target}, {clients} client(s) ...", file=sys.stderr)
                split = CpuSplit(service_grouping(service.front_pids[url], apps[target]))
                result = load(
                    url + single, single_body, clients=clients, headers=service.headers,
                    on_measure_start=split.start, on_measure_stop=split.stop, **timing,
                )  # fmt: skip
                result["cpu_ms_per_request"] = _per(split, max(result["requests"], 1))
                if target == "service" and clients == args.clients and number == 1:
                    curves["service, single endpoint"] = result["latencies_ms"]
                rows.append(
                    {"round": number, "target": target, "clients": clients, **_summary(result)}
                )
    return rows


def _per(split: CpuSplit, count: int) -> dict[str, float]:
    """CPU milliseconds per request (or message) of each group of ``split``."""
    return {group: round(1000 * seconds / count, 3) for group, seconds in split.seconds.items()}


def _median_round(rows: list[dict[str, Any]], target: str, clients: int) -> dict[str, Any]:
    """The round with the median throughput (its p50/p99 belong to one real run)."""
    picked = sorted(
        (r for r in rows if r["target"] == target and r["clients"] == clients),
        key=lambda r: r["requests_per_s"],
    )
    return picked[len(picked) // 2]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def targets(out: dict[str, Any]) -> dict[str, Any]:
    """Each target with its measured value and whether it holds in this run."""
    raw = out["raw_ceiling"]["messages_per_s"]
    single = out["service_single"]
    clients = int(out["args"]["clients"])
    top = [row for row in out["curve"] if row["clients"] > clients]
    baseline = out["baseline"]["requests_per_s"]
    lone_rounds = [r for r in out["rounds"] if r["target"] == "service" and r["clients"] == 1]
    floor_rounds = [r for r in out["rounds"] if r["target"] == "floor" and r["clients"] == 1]
    single_cpu = single["cpu_ms_per_request"]
    batch_cpu = out["service_batch"]["cpu_ms_per_message"]
    values = {
        "single_cpu_vs_batch_cpu": round(service_ms(single_cpu) / service_ms(batch_cpu), 2),
        "front_cpu_ms": single_cpu["front"],
        "single_vs_baseline": round(single["requests_per_s"] / baseline, 2),
        "single_p99_over_p50": round(single["p99_ms"] / single["p50_ms"], 2),
        "lone_p50_over_floor_ms": round(
            _median([r["p50_ms"] for r in lone_rounds])
            - _median([r["p50_ms"] for r in floor_rounds]),
            1,
        ),
        "batch_vs_raw_ceiling": round(out["service_batch"]["messages_per_s"] / raw, 2),
        "above_clients_errors": sum(sum((row["errors"] or {}).values()) for row in top),
    }
    checks = {
        "single_cpu_vs_batch_cpu": values["single_cpu_vs_batch_cpu"] <= 1.5,
        "front_cpu_ms": values["front_cpu_ms"] <= 0.3,
        "single_vs_baseline": values["single_vs_baseline"] >= 10,
        "single_p99_over_p50": values["single_p99_over_p50"] <= 2,
        "lone_p50_over_floor_ms": values["lone_p50_over_floor_ms"] <= 2,
        "batch_vs_raw_ceiling": values["batch_vs_raw_ceiling"] >= 0.7,
        "above_clients_errors": values["above_clients_errors"] == 0,
    }
    return {**values, "held": checks, "met": all(checks.values())}


def candidates(
    service: Service, args: BenchArgs, timing: dict[str, float], curves: dict[str, list[float]]
) -> list[dict[str, Any]]:
    """Topologies and replica layouts, each at the single endpoint under the same load."""
    single = "/v1/inference/intent-classify"
    micro = "front micro-batches (<= 2 calls under way)"
    one = {"model_min_replicas": 1, "model_max_replicas": 1}

    def default_router(deployment: dict[str, Any]) -> None:
        deployment.pop("request_router_config", None)

    def user_code_thread(deployment: dict[str, Any]) -> None:
        env = deployment["ray_actor_options"]["runtime_env"]["env_vars"]
        env.pop("RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD")

    no_edit = None
    runs: list[tuple[str, Any, dict[str, Any], dict[str, str]]] = [
        (
            "front makes 1 handle call per request; shipped replicas (2 x 1 ORT thread)",
            no_edit, {}, {"SWITCHYARD_INFERENCE_BATCH_MAX_MESSAGES": "1"},
        ),
        (
            f"{micro}; front gathers 1.5 ms before each call (the earlier default)",
            no_edit, {}, {"SWITCHYARD_INFERENCE_BATCH_WAIT_MS": "1.5"},
        ),
        (
            "front micro-batches, no cap on calls under way",
            no_edit, {}, {"SWITCHYARD_INFERENCE_MAX_INFLIGHT_CALLS": "0"},
        ),
        (
            "front micro-batches, up to 4 calls under way (one queued behind each replica's)",
            no_edit, {}, {"SWITCHYARD_INFERENCE_MAX_INFLIGHT_CALLS": "4"},
        ),
        (
            f"{micro}; Serve's default router (two random replicas, the less busy)",
            default_router, {}, {},
        ),
        (
            f"{micro}; the front's handle router on a thread of its own (Ray's default)",
            no_edit, {}, {"RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "1"},
        ),
        (
            f"{micro}; replicas hand calls to a second loop in another thread (Ray's default)",
            user_code_thread, {}, {},
        ),
        (
            f"{micro}; RAY_SERVE_THROUGHPUT_OPTIMIZED=1 in the front",
            no_edit, {}, {"RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"},
        ),
        (
            f"{micro}; replicas wait up to 2 ms to fill a batch",
            no_edit, {"model_batch_wait_ms": 2.0}, {},
        ),
        (f"{micro}; 1 replica x 1 ORT thread", no_edit, {"ort_intra_op_threads": 1, **one}, {}),
        (
            f"{micro}; 1 replica x 2 ORT threads, no spinning",
            no_edit, {"ort_intra_op_threads": 2, "ort_allow_spinning": False, **one}, {},
        ),
    ]  # fmt: skip
    rows = []
    for name, edit, overrides, env in runs:
        print(f"candidate: {name} ...", file=sys.stderr)
        service.deploy(edit, **overrides)
        with service.front(**env) as base:
            lone = load(base + single, single_body, clients=1, headers=service.headers, **timing)
            result = load(
                base + single, single_body, clients=args.clients,
                headers=service.headers, **timing,
            )  # fmt: skip
        if "BATCH_MAX_MESSAGES" in str(env):
            curves[name] = result["latencies_ms"]
        rows.append({"candidate": name, "1_client_p50_ms": lone["p50_ms"], **_summary(result)})
    service.deploy()  # back to the shipped config
    return rows


def plot(curves: dict[str, list[float]], path: Path, clients: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, values in curves.items():
        if not values:
            continue
        ordered = sorted(values)
        ys = [(i + 1) / len(ordered) for i in range(len(ordered))]
        ax.plot(ordered, ys, label=f"{name} (n={len(ordered)})")
    ax.axvline(100, color="grey", linestyle="--", linewidth=1, label="p99 target 100 ms")
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(f"Single-message classify, {clients} concurrent clients, loopback")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_curve(out: dict[str, Any], path: Path) -> None:
    """Throughput, p50 and p99 of the single endpoint against concurrent clients."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = out["curve"]
    xs = [row["clients"] for row in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(xs, [row["requests_per_s"] for row in rows], marker="o", label="service")
    left.axhline(out["raw_ceiling"]["messages_per_s"], color="grey", linestyle="--",
                 label="raw model ceiling (msg/s)")  # fmt: skip
    left.set_xscale("log", base=2)
    left.set_xlabel("concurrent clients")
    left.set_ylabel("requests/s")
    left.set_title("Throughput, single endpoint")
    left.legend(fontsize=8)
    right.plot(xs, [row["p50_ms"] for row in rows], marker="o", label="p50")
    right.plot(xs, [row["p99_ms"] for row in rows], marker="o", label="p99")
    right.axhline(out["floor"]["1_client"]["p50_ms"], color="grey", linestyle=":",
                  label="no-op model, 1 client, p50")  # fmt: skip
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xlabel("concurrent clients")
    right.set_ylabel("latency (ms, log scale)")
    right.set_title("Latency, single endpoint")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


TARGET_TEXT = {
    "single_cpu_vs_batch_cpu": "server CPU per single request at --clients / per message of "
    "the batch endpoint (<= 1.5)",
    "front_cpu_ms": "front CPU per single request at --clients, ms (<= 0.3)",
    "single_vs_baseline": "single endpoint vs baseline, --clients (>= 10x)",
    "single_p99_over_p50": "single endpoint p99 / p50, --clients (<= 2)",
    "lone_p50_over_floor_ms": "1 client: median p50 minus the no-op floor's median p50, ms (<= 2)",
    "batch_vs_raw_ceiling": "batch endpoint msg/s vs raw ceiling (>= 0.7x)",
    "above_clients_errors": "errors above --clients (64, 128 clients) (0)",
}


def cpu_budget_lines(out: dict[str, Any]) -> list[str]:
    """Server CPU per message of each scenario by process, and what the machine allows."""
    clients = int(out["args"]["clients"])
    rows = {
        f"single, {clients} clients (per request)": out["service_single"]["cpu_ms_per_request"],
        f"batch, {out['args']['batch_clients']} x {out['args']['batch_messages']} (per "
        "message)": out["service_batch"]["cpu_ms_per_message"],
        "single, 1 client (per request)": out["service_single_1_client"]["cpu_ms_per_request"],
        f"no-op floor, {clients} clients (per request)": out["floor"][f"{clients}_clients"][
            "cpu_ms_per_request"
        ],
    }
    columns = [*SERVICE_GROUPS, "service", "load generator", "not the service"]
    lines = [
        "",
        "Server CPU per message, ms, by process (the median rounds; the service is every "
        "process in the columns before it; the load generator and whatever else ran on the "
        "machine are counted apart):",
        "",
        f"| scenario | {' | '.join(columns)} |",
        "|---|" + "---|" * len(columns),
    ]
    for name, split in rows.items():
        cells = {**split, "service": service_ms(split), "not the service": split["other"]}
        lines.append(
            f"| {name} | " + " | ".join(f"{cells.get(c, 0.0):.3f}" for c in columns) + " |"
        )
    return [
        *lines,
        "",
        "What this machine allows at best:",
        "",
        *bound_lines(
            out, floor_ms=service_ms(rows[f"no-op floor, {clients} clients (per request)"])
        ),
    ]


def bound_lines(out: dict[str, Any], *, floor_ms: float) -> list[str]:
    """What this machine allows at best, target by target, from the model's own speed and the
    floor's CPU per request: a target beyond it cannot be met here however lean the service."""
    raw = out["raw_ceiling"]
    clients = int(out["args"]["clients"])
    by_setup = raw["by_setup_and_batch_size"]
    # CPU per message of each setup and batch size (threads / throughput; spinning threads
    # count whole): the cheapest is what the model needs at the least.
    model_ms, setup, size = min(
        (1000 * int(name.split()[0]) / rate, name, int(batch))
        for name, by_size in by_setup.items()
        for batch, rate in by_size.items()
    )
    # A lone message: the model's own time for a batch of one, in its quickest setup.
    lone_ms, lone_setup = min(
        (1000 / rate, name)
        for name, by_size in by_setup.items()
        for batch, rate in by_size.items()
        if int(batch) == 1
    )
    cores = os.cpu_count() or 1
    target_rps = 0.7 * raw["messages_per_s"]
    most_rps = 1000 * cores / (model_ms + floor_ms)
    return [
        f"- Throughput: 0.7x the raw ceiling is {target_rps:.0f} req/s; on {cores} cores that "
        f"leaves {1000 * cores / target_rps:.3f} ms of CPU per request for everything. The "
        f"model alone needs {model_ms:.3f} ms per message at its most frugal ({setup}, batch "
        f"{size}) and the floor {floor_ms:.3f} ms per request with no model at all, so {cores} "
        f"cores serve at most {most_rps:.0f} single requests a second "
        f"({most_rps / raw['messages_per_s']:.2f}x the ceiling) however little the rest costs.",
        f"- {clients} clients: in a closed loop the mean latency is clients / throughput, so "
        f"at that most it is at least {1000 * clients / most_rps:.1f} ms, and p99 above it.",
        f"- 1 client: the model alone takes {lone_ms:.1f} ms for one message ({lone_setup}, "
        "batch 1), and the floor's no-op deployment none of it, so the service's p50 sits at "
        f"least that far above the floor's (target: within 2 ms).",
    ]


def front_ladder_lines(out: dict[str, Any]) -> list[str]:
    """The front ladder as a table, and what its bottom rung means for the front's target."""
    ladder = out.get("front_ladder")
    if not ladder:
        return []
    bare, app, shipped = (row["front_cpu_ms"] for row in ladder)
    return [
        "",
        f"Where the front's CPU goes, single endpoint, {out['args']['clients']} clients (one "
        "round each, back to back; the first two rungs replace the model by an in-process "
        "stand-in that takes its time, `benchmarks/paced_front.py`):",
        "",
        "| rung | req/s | p50 ms | messages per call | front CPU ms per request |",
        "|---|---|---|---|---|",
        *(
            f"| {row['rung']} | {row['requests_per_s']} | {row['p50_ms']} | "
            f"{row['messages_per_call']} | {row['front_cpu_ms']} |"
            for row in ladder
        ),
        "",
        f"So per request: uvicorn, the event loop and the grouping queue {bare:.3f} ms; the "
        f"service's own request handling {app - bare:+.3f} ms; the deployment-handle call "
        f"{shipped - app:+.3f} ms. A front whose app did nothing at all would cost "
        f"{bare:.3f} ms at this request rate (target 0.3).",
    ]


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Inference"


def markdown(out: dict[str, Any], command: str) -> str:
    raw, base = out["raw_ceiling"], out["baseline"]
    s1, sb, s1c = out["service_single"], out["service_batch"], out["service_single_1_client"]
    t = out["targets"]
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {out['machine']}. Model: `{out['model_dir']}`.",
        f"Command: `{command}`",
        "",
        "| what | clients | throughput | p50 ms | p95 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|---|",
        f"| raw ONNX Runtime ceiling ({raw['best_setup']}, batch {raw['best_batch_size']}, "
        "no HTTP) | — | "
        f"{raw['messages_per_s']} msg/s | | | | |",
        f"| baseline: FastAPI + transformers pipeline, torch fp32, "
        f"{out['args']['baseline_threads']} thread(s) | {out['args']['clients']} | "
        f"{base['requests_per_s']} req/s | {base['p50_ms']} | {base['p95_ms']} | "
        f"{base['p99_ms']} | {base['errors'] or 0} |",
        f"| service, single endpoint | {out['args']['clients']} | {s1['requests_per_s']} req/s | "
        f"{s1['p50_ms']} | {s1['p95_ms']} | {s1['p99_ms']} | {s1['errors'] or 0} |",
        f"| service, single endpoint | 1 | {s1c['requests_per_s']} req/s | {s1c['p50_ms']} | "
        f"{s1c['p95_ms']} | {s1c['p99_ms']} | {s1c['errors'] or 0} |",
        f"| service, batch endpoint ({out['args']['batch_messages']} msg/request) | "
        f"{out['args']['batch_clients']} | {sb['messages_per_s']} msg/s "
        f"({sb['requests_per_s']} req/s) | {sb['p50_ms']} | {sb['p95_ms']} | {sb['p99_ms']} | "
        f"{sb['errors'] or 0} |",
        "",
        f"Raw ceiling by setup and batch size (msg/s): {raw['by_setup_and_batch_size']}.",
        "",
        "",
        "| target | measured | holds |",
        "|---|---|---|",
        *(
            f"| {TARGET_TEXT[name]} | {t[name]} | {'yes' if held else 'NO'} |"
            for name, held in t["held"].items()
        ),
        "",
        f"All met: {'yes' if t['met'] else 'NO'}.",
    ]
    fl = out["floor"]
    lines += [
        "",
        "Rounds (single endpoint; service and no-op floor taking turns; the tables above and "
        "below show the round with the median throughput):",
        "",
        "| round | what | clients | req/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['round']} | {r['target']} | {r['clients']} | {r['requests_per_s']} | "
            f"{r['p50_ms']} | {r['p99_ms']} | {r['errors'] or 0} |"
            for r in out["rounds"]
        ),
        *cpu_budget_lines(out),
        "",
        "Ray floor: the same front and handle calls to a no-op deployment "
        "(`benchmarks/ray_floor.py`):",
        "",
        "| clients | req/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|",
        *(
            f"| {key.split('_')[0]} | {row['requests_per_s']} | {row['p50_ms']} | "
            f"{row['p99_ms']} | {row['errors'] or 0} |"
            for key, row in fl.items()
        ),
        "",
        "Concurrency curve (service, single endpoint; `inference_curve.png`):",
        "",
        "| clients | req/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|",
        *(
            f"| {row['clients']} | {row['requests_per_s']} | {row['p50_ms']} | "
            f"{row['p99_ms']} | {row['errors'] or 0} |"
            for row in out["curve"]
        ),
    ]
    lines += front_ladder_lines(out)
    if out.get("grouped_runs"):
        lines += [
            "",
            "Padding: one padded ONNX Runtime run vs length-grouped runs (msg/s, 1 thread):",
            "",
            "| batch | one padded run | length-grouped runs |",
            "|---|---|---|",
        ]
        for row in out["grouped_runs"]:
            lines.append(
                f"| {row['batch']} | {row['one padded run']} | {row['length-grouped runs']} |"
            )
    if out.get("transport_costs"):
        lines += [
            "",
            "Deployment-handle call cost, no model run (`model_version`, 4 concurrent callers):",
            "",
            "| transport | calls/s | caller CPU ms/call | replica CPU ms/call |",
            "|---|---|---|---|",
        ]
        for row in out["transport_costs"]:
            lines.append(
                f"| {row['transport']} | {row['calls_per_s']} | {row['caller_cpu_ms_per_call']} "
                f"| {row['replica_cpu_ms_per_call']} |"
            )
    if out.get("candidates"):
        lines += [
            "",
            f"Candidates (single endpoint, {out['args']['clients']} clients and 1 client, one "
            "round each, same run):",
            "",
            "| candidate | req/s | p50 ms | p99 ms | errors | 1 client p50 ms |",
            "|---|---|---|---|---|---|",
        ]
        for row in out["candidates"]:
            lines.append(
                f"| {row['candidate']} | {row['requests_per_s']} | {row['p50_ms']} | "
                f"{row['p99_ms']} | {row['errors'] or 0} | {row['1_client_p50_ms']} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    args = parse_args()
    out = run(args)
    command = "python -m benchmarks.bench_inference " + " ".join(sys.argv[1:])
    if os.environ.get("SWITCHYARD_MODEL_DIR"):
        command = f"SWITCHYARD_MODEL_DIR={os.environ['SWITCHYARD_MODEL_DIR']} {command}"
    print(json.dumps(out, indent=2))
    write_section(HEADING, markdown(out, command.strip()), args.results)


if __name__ == "__main__":
    main()
