"""What shadow traffic costs the served requests: p50 at 32 clients, shadowing off then on.

One run: Ray, the Serve application and one uvicorn front (as `switchyard run` starts them,
`benchmarks/bench_inference.py`'s ``Service``), then rounds of: the single endpoint with no
shadow; the same model deployed as a shadow under another version name
(``serving.rollout.deploy_shadow``) with the Redis record the fronts follow (the front's
default sample rate, ``SWITCHYARD_INFERENCE_SHADOW_SAMPLE_RATE``), measured again; the shadow
removed. The front is never restarted: it notices the record. Rounds alternate the two states
so that drift on a shared machine hits both alike. Target: p50 on <= 1.10 x p50 off.
Prints JSON and writes its section of benchmarks/RESULTS.md (in place of the previous one).

    python -m benchmarks.bench_shadow               # ~3 minutes
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_inference import Service, single_body
from benchmarks.common import RESULTS, machine, write_section
from benchmarks.loadgen import load

SINGLE = "/v1/inference/intent-classify"
TARGET_RATIO = 1.10


def _models_root(tmp: Path) -> tuple[Path, str, str]:
    """A models directory with the shipped version and the same files as ``<version>-shadow``."""
    from core.settings import get_settings
    from intent.runner import resolve_model_dir

    settings = get_settings()
    shipped = Path(settings.model_dir or resolve_model_dir(settings.models_root)).resolve()
    root = tmp / "models"
    root.mkdir()
    (root / shipped.name).symlink_to(shipped, target_is_directory=True)
    shadow = root / f"{shipped.name}-shadow"
    shadow.mkdir()
    for path in shipped.iterdir():
        if path.is_file() and path.name != "model_card.json":
            (shadow / path.name).symlink_to(path)
    card = json.loads((shipped / "model_card.json").read_text())
    card["model_version"] = shadow.name
    (shadow / "model_card.json").write_text(json.dumps(card))
    (root / "LATEST").write_text(shipped.name + "\n")
    return root, shipped.name, shadow.name


def _measure(base: str, service: Service, clients: int, timing: dict[str, float]) -> dict:
    result = load(base + SINGLE, single_body, clients=clients, headers=service.headers, **timing)
    return {k: v for k, v in result.items() if k != "latencies_ms"}


def run(rounds: int, clients: int, duration_s: float, warmup_s: float) -> dict[str, Any]:
    import redis

    from serving import shadow as records
    from serving.rollout import deploy_shadow, remove_shadow, shadow_app_name

    timing = {"duration_s": duration_s, "warmup_s": warmup_s}
    out: dict[str, Any] = {"machine": machine(), "clients": clients, "rounds": []}
    with tempfile.TemporaryDirectory(prefix="switchyard-bench-shadow-") as tmp:
        models_root, served, candidate = _models_root(Path(tmp))
        os.environ["SWITCHYARD_MODELS_ROOT"] = str(models_root)
        os.environ.pop("SWITCHYARD_MODEL_DIR", None)
        service = Service(Path(tmp))
        try:
            service.start()
            client = redis.Redis.from_url(service.env["REDIS_URL"])
            settings = service.settings
            out["served"], out["shadow"] = served, candidate
            out["sample_rate"] = settings.inference_shadow_sample_rate
            with service.front() as base:
                for i in range(rounds):
                    print(f"round {i + 1}: shadowing off ...", file=sys.stderr)
                    off = _measure(base, service, clients, timing)
                    print(f"round {i + 1}: shadowing on ...", file=sys.stderr)
                    deploy_shadow(settings, candidate)
                    record = records.ShadowRecord(
                        app=shadow_app_name(settings.serve_app_name), version=candidate
                    )
                    records.write_record(client, record)
                    time.sleep(3)  # the front reads the record every 2 s
                    on = _measure(base, service, clients, timing)
                    records.delete_record(client)
                    remove_shadow(settings)
                    time.sleep(3)  # the front's last counts reach Redis
                    counts = records.read_counts(client, record)
                    out["rounds"].append(
                        {
                            "off": off,
                            "on": on,
                            "compared": counts.compared,
                            "agreement": counts.agreement_rate,
                            "dropped": counts.dropped,
                            "errors": counts.errors,
                            "disagreements": {
                                " -> ".join(pair): count
                                for pair, count in counts.disagreements.items()
                            },
                        }
                    )
        finally:
            service.stop()
    off_p50 = statistics.median(r["off"]["p50_ms"] for r in out["rounds"])
    on_p50 = statistics.median(r["on"]["p50_ms"] for r in out["rounds"])
    out["p50_off_ms"], out["p50_on_ms"] = off_p50, on_p50
    out["ratio"] = round(on_p50 / off_p50, 3)
    out["target_met"] = out["ratio"] <= TARGET_RATIO
    return out


# The stable part of this benchmark's heading in RESULTS.md (the date follows it).
HEADING = "## Shadow traffic"


def markdown(out: dict[str, Any], command: str) -> str:
    lines = [
        f"\n{HEADING} — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n",
        f"Machine: {out['machine']}. Command: `{command}`",
        f"Served `{out['served']}`; shadow: the same files as `{out['shadow']}`, sample rate "
        f"{out['sample_rate']}, single endpoint, {out['clients']} clients.",
        "",
        "| round | off req/s | off p50 ms | off p99 ms | on req/s | on p50 ms | on p99 ms "
        "| compared | agreement | dropped | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(out["rounds"], 1):
        off, on = r["off"], r["on"]
        agreement = "—" if r["agreement"] is None else f"{100 * r['agreement']:.1f}%"
        lines.append(
            f"| {i} | {off['requests_per_s']} | {off['p50_ms']} | {off['p99_ms']} | "
            f"{on['requests_per_s']} | {on['p50_ms']} | {on['p99_ms']} | {r['compared']} | "
            f"{agreement} | {r['dropped']} | {r['errors']} |"
        )
    lines += [
        "",
        f"p50 (median of rounds): off {out['p50_off_ms']} ms, on {out['p50_on_ms']} ms, "
        f"ratio {out['ratio']} (target <= {TARGET_RATIO}: "
        f"{'met' if out['target_met'] else 'NOT met'}).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="Off/on pairs to measure.")
    parser.add_argument("--clients", type=int, default=32, help="Concurrent clients.")
    parser.add_argument("--duration-s", type=float, default=8.0, help="Seconds measured.")
    parser.add_argument("--warmup-s", type=float, default=2.0, help="Seconds before measuring.")
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="Markdown whose section to replace."
    )
    args = parser.parse_args()
    out = run(args.rounds, args.clients, args.duration_s, args.warmup_s)
    print(json.dumps(out, indent=2))
    command = "python -m benchmarks.bench_shadow " + " ".join(sys.argv[1:])
    write_section(HEADING, markdown(out, command.strip()), args.results)


if __name__ == "__main__":
    main()
