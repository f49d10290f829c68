"""Where the machine's CPU goes during a measurement, by process group.

Client, front, replicas and Ray's own processes share the same cores, so a throughput
figure means little without knowing who spent the CPU. ``CpuSplit`` snapshots the CPU time
of every process before and after a measurement and sums the difference per group.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import psutil

# (group name, test on the process's pid and command line); first match wins.
Grouping = list[tuple[str, Callable[[int, str], bool]]]


def _cpu_seconds() -> dict[int, tuple[str, float]]:
    seen: dict[int, tuple[str, float]] = {}
    for proc in psutil.process_iter(["pid", "cmdline", "name"]):
        try:
            times = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        command = " ".join(proc.info["cmdline"] or []) or (proc.info["name"] or "")
        seen[proc.info["pid"]] = (command, times.user + times.system)
    return seen


class CpuSplit:
    """CPU seconds per group between ``start()`` and ``stop()`` (in ``seconds`` afterwards);
    processes no group claims count as "other"."""

    def __init__(self, grouping: Grouping) -> None:
        self._grouping = grouping
        self._before: dict[int, tuple[str, float]] = {}
        self.seconds: dict[str, float] = {}

    def start(self) -> None:
        self._before = _cpu_seconds()

    def stop(self) -> dict[str, float]:
        totals = {name: 0.0 for name, _ in self._grouping} | {"other": 0.0}
        for pid, (command, seconds) in _cpu_seconds().items():
            spent = seconds - self._before.get(pid, (command, 0.0))[1]
            group = next((name for name, test in self._grouping if test(pid, command)), "other")
            totals[group] += max(spent, 0.0)
        self.seconds = totals
        return totals


# The service's own processes, by group; the ratio targets count these and nothing else.
SERVICE_GROUPS = ("front", "replicas", "Serve controller", "raylet", "GCS", "other Ray", "Redis")


def service_grouping(front_pid: int, app_name: str) -> Grouping:
    """Each process of the service in its group (``SERVICE_GROUPS``), this process (the load
    generator) apart, and everything else on the machine as "other" (not the service)."""
    me = os.getpid()
    return [
        ("front", lambda pid, _: pid == front_pid),
        ("replicas", lambda _, command: f"ray::ServeReplica:{app_name}:" in command),
        ("load generator", lambda pid, _: pid == me),
        ("Serve controller", lambda _, command: "ray::ServeController" in command),
        ("raylet", lambda _, command: "/raylet/raylet" in command),
        ("GCS", lambda _, command: "/gcs/gcs_server" in command),
        # Dashboard agent, log monitor, idle workers: Ray's, started with it.
        ("other Ray", lambda _, command: "ray::" in command or "/site-packages/ray/" in command),
        # The embedded one, or the server REDIS_URL names (an idle one costs next to nothing).
        ("Redis", lambda _, command: "redis-server" in command),
    ]


def service_ms(split_ms: dict[str, float]) -> float:
    """CPU of the service's own processes, out of a split by ``service_grouping``."""
    return sum(split_ms.get(group, 0.0) for group in SERVICE_GROUPS)
