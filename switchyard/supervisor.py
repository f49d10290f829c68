"""`switchyard run`: start every part of the service in the foreground and stop them together."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx
import psutil
from rich.console import Console
from rich.table import Table

from core.redaction import redact_url
from core.redis_url import start_embedded_redis, stop_embedded_redis
from core.settings import Settings
from platform_api.db import migrate, session_scope
from platform_api.services.tokens import create_token, list_tokens
from switchyard.processes import (
    ProcessSpec,
    sandbox_not_started,
    served_elsewhere,
    service_processes,
    workers_per_class,
)

console = Console(stderr=True)
# prctl(2): orphaned descendants are reparented to this process instead of init.
PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Become the child subreaper of everything started from here: a process that
    daemonizes (the embedded redis-server) or outlives its parent (Ray's agents) stays a
    descendant, so ``stop`` finds it."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class StartupError(RuntimeError):
    """A part of the service could not start."""


class DataDirInUse(RuntimeError):
    """Another ``switchyard run`` holds the data directory."""


def hold_data_lock(var_dir: Path) -> IO[str]:
    """Lock ``var_dir/run.lock`` for this process's lifetime (the kernel releases it when the
    process ends, however it ends); DataDirInUse when another run holds it."""
    var_dir.mkdir(parents=True, exist_ok=True)
    handle = (var_dir / "run.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise DataDirInUse(
            f"{var_dir} is in use by another `switchyard run` (pid {holder}); stop it first, "
            "or give this one its own SWITCHYARD_VAR_DIR"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


# How long each step of stopping Ray may take before the rest is killed instead.
RAY_STOP_STEP_S = 15.0


def _bounded(step: Callable[[], object], seconds: float, name: str) -> None:
    """Run ``step`` in a daemon thread for at most ``seconds``; a step that fails or hangs
    is reported and left behind (the process ends soon after)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            step()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=run, name=f"stop-{name}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        console.print(f"[yellow]{name} did not finish within {seconds:.0f}s; going on[/yellow]")
    elif errors and not isinstance(errors[0], Exception):
        raise errors[0]


# A part that exits is started again, unless it exits more often than this (a crash loop).
MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0


@dataclass
class Supervisor:
    settings: Settings
    children: dict[str, subprocess.Popen] = field(default_factory=dict)
    started_ray: bool = False
    model_deployed: bool = False
    stopping: bool = False
    _env: dict[str, str] = field(default_factory=dict)
    _specs: dict[str, ProcessSpec] = field(default_factory=dict)

    @property
    def state_file(self) -> Path:
        return self.settings.var_dir / "run.json"

    def run(self) -> int:
        try:
            self._lock = hold_data_lock(self.settings.var_dir)
        except DataDirInUse as exc:
            console.print(f"[red]{exc}[/red]")
            return 1
        adopt_orphans()
        signal.signal(signal.SIGTERM, lambda *_: self._raise_interrupt())
        try:
            env = self._prepare()
            # ray.init installs a SIGTERM handler that aborts the process: take it back.
            signal.signal(signal.SIGTERM, lambda *_: self._raise_interrupt())
            self._start_children(env)
            return self._watch()
        except KeyboardInterrupt:
            return 0
        except StartupError as exc:
            console.print(f"[red]start-up failed: {exc}[/red]")
            return 1
        finally:
            self.stop()

    def _raise_interrupt(self) -> None:
        raise KeyboardInterrupt

    def _prepare(self) -> dict[str, str]:
        settings = self.settings
        settings.var_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["SWITCHYARD_VAR_DIR"] = str(settings.var_dir)
        env["DATABASE_URL"] = settings.resolved_database_url
        with console.status("starting Redis"):
            env["REDIS_URL"] = settings.redis_url or start_embedded_redis(settings)
        with console.status("applying database migrations"):
            migrate(settings)
        self.first_token = self._first_start_token()
        with console.status("starting Ray"):
            env["RAY_ADDRESS"], self.dashboard_url = self._start_ray()
        # ray.init sets its auth mode only in this process's environment; children need it too.
        env.update(
            {k: v for k, v in os.environ.items() if k.startswith("RAY_") and k != "RAY_ADDRESS"}
        )
        with console.status("deploying the intent classifier on Ray Serve"):
            deployed = subprocess.run(
                [sys.executable, "-m", "serving.rollout"], env=env, start_new_session=False
            )
        # On failure the rollout has printed the cause and what to do; /readyz keeps it.
        self.model_deployed = deployed.returncode == 0
        return env

    def _first_start_token(self) -> str | None:
        """On the very first start, a development API token, printed once."""
        with session_scope(self.settings) as session:
            if list_tokens(session, environment="development"):
                return None
            _, secret = create_token(session, environment="development", name="first-start")
            return secret

    def _start_ray(self) -> tuple[str, str | None]:
        import ray

        if self.settings.ray_address:
            ray.init(
                address=self.settings.ray_address, logging_level="WARNING", log_to_driver=False
            )
            address = self.settings.ray_address
        else:
            context = ray.init(
                # Keep the local cluster on loopback; a cluster is what RAY_ADDRESS is for.
                _node_ip_address="127.0.0.1",
                include_dashboard=True,
                dashboard_host=self.settings.host,
                dashboard_port=self.settings.dashboard_port,
                logging_level="WARNING",
                configure_logging=False,
                # Workers' output stays in Ray's logs (and the dashboard): a failing replica
                # or build would otherwise repeat its traceback here on every retry.
                log_to_driver=False,
            )
            self.started_ray = True
            address = ray.get_runtime_context().gcs_address
            dashboard = getattr(context, "dashboard_url", None)
            return address, f"http://{dashboard}" if dashboard else None
        return address, None

    def _start_children(self, env: dict[str, str]) -> None:
        self._env = env
        self._specs = {spec.name: spec for spec in service_processes(self.settings)}
        for spec in self._specs.values():
            self._spawn(spec)
        self._wait_for_front()
        self._write_state(list(self._specs.values()))
        self._print_summary(list(self._specs.values()), env)

    def _spawn(self, spec: ProcessSpec) -> None:
        self.children[spec.name] = subprocess.Popen(spec.argv, env={**self._env, **spec.env})

    def _wait_for_front(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        url = f"{self.settings.base_url}/healthz"
        while time.monotonic() < deadline:
            try:
                if httpx.get(url, timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.children["api"].poll() is not None:
                raise StartupError("the HTTP front exited during start-up (see its log above)")
            time.sleep(0.2)
        raise StartupError(f"the HTTP front did not answer {url} within {timeout:.0f}s")

    def _write_state(self, specs: list[ProcessSpec]) -> None:
        state = {
            "supervisor_pid": os.getpid(),
            "base_url": f"{self.settings.base_url}/v1",
            "dashboard_url": self.dashboard_url,
            "processes": {name: proc.pid for name, proc in self.children.items()},
            "listening": {s.name: s.listens_on for s in specs if s.listens_on},
            # Workers per queue class; 0: the class is served by workers on other machines.
            "workers": workers_per_class(self.settings),
        }
        # Replaced whole, never rewritten in place: `status` may be reading it meanwhile.
        partial = self.state_file.with_suffix(".json.tmp")
        partial.write_text(json.dumps(state, indent=2))
        partial.replace(self.state_file)

    def _print_summary(self, specs: list[ProcessSpec], env: dict[str, str]) -> None:
        table = Table(title="Switchyard is running", show_header=True)
        table.add_column("part")
        table.add_column("where")
        for spec in specs:
            table.add_row(spec.name, spec.listens_on or f"pid {self.children[spec.name].pid}")
        for queue_class, count in workers_per_class(self.settings).items():
            if count == 0:
                table.add_row(f"worker-{queue_class}", served_elsewhere(queue_class))
        if (sandbox_note := sandbox_not_started(self.settings)) is not None:
            table.add_row("sandbox", sandbox_note)
        table.add_row("database", redact_url(env["DATABASE_URL"]))
        table.add_row("redis", redact_url(env["REDIS_URL"]))
        table.add_row("ray", env["RAY_ADDRESS"])
        table.add_row("ray dashboard", self.dashboard_url or "(the cluster's own)")
        table.add_row(
            "model",
            f"Ray Serve application {self.settings.serve_app_name!r}"
            if self.model_deployed
            else "[red]not serving: see the line above, /readyz or `switchyard status`[/red]",
        )
        console.print(table)
        if self.first_token:
            console.print(
                "\nDevelopment API token (shown once, keep it):\n"
                f"  [bold]{self.first_token}[/bold]\n"
                f"  curl -H 'Authorization: Bearer {self.first_token}' "
                f"{self.settings.base_url}/v1/integration\n"
            )
        console.print("Press Ctrl-C to stop every part.")

    def _watch(self) -> int:
        """Start again a part that exits; stop everything when one keeps exiting (more than
        ``MAX_RESTARTS`` times within ``RESTART_WINDOW_S``: a crash loop, not a blip)."""
        restarts: dict[str, list[float]] = {name: [] for name in self.children}
        while True:
            for name, proc in list(self.children.items()):
                code = proc.poll()
                if code is None:
                    continue
                now = time.monotonic()
                recent = [t for t in restarts[name] if now - t < RESTART_WINDOW_S] + [now]
                restarts[name] = recent
                if len(recent) > MAX_RESTARTS:
                    console.print(
                        f"[red]{name} exited with code {code}, {len(recent)} times within "
                        f"{RESTART_WINDOW_S:.0f}s; stopping[/red]"
                    )
                    return 1
                console.print(f"[yellow]{name} exited with code {code}; starting it again[/yellow]")
                self._spawn(self._specs[name])
                self._write_state(list(self._specs.values()))
            time.sleep(0.5)

    def stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        console.print("stopping…")
        for proc in self.children.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        for proc in self.children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._stop_ray()
        stop_embedded_redis()
        self._stop_leftovers()
        self.state_file.unlink(missing_ok=True)
        console.print("stopped.")

    def _stop_leftovers(self, grace_s: float = 5.0) -> None:
        """Whatever descendant outlived its parent (Ray's agents, a daemonized server)."""
        leftovers = psutil.Process().children(recursive=True)
        for process in leftovers:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, alive = psutil.wait_procs(leftovers, timeout=grace_s)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(alive, timeout=grace_s)

    def _stop_ray(self) -> None:
        try:
            import ray
            from ray import serve
        except ImportError:
            return
        if not ray.is_initialized():
            return
        if self.started_ray:
            # Our own local cluster: shut Serve down with it. On a shared cluster, leave it
            # running. A raylet already gone (a whole process group was signalled, as systemd
            # does) makes serve.shutdown wait forever: bounded, and the leftovers are killed.
            _bounded(serve.shutdown, RAY_STOP_STEP_S, "serve.shutdown")
        _bounded(ray.shutdown, RAY_STOP_STEP_S, "ray.shutdown")
