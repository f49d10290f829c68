"""Helpers every benchmark script shares: ports, the machine line, percentiles, processes,
and writing a benchmark's section of RESULTS.md."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The instruction sets that decide how fast (and, for int8 without VNNI, how exactly) the model
# runs; the hosts change between sessions, so each result names the ones its CPU had.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


def cpu(cpuinfo: str) -> str:
    """The CPU model and which of ``CPU_FLAGS`` it has, from the text of /proc/cpuinfo."""
    if not cpuinfo:
        return "unknown CPU"
    model, flags = "unknown CPU", set[str]()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model == "unknown CPU":
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    present = [flag for flag in CPU_FLAGS if flag in flags]
    return f"{model} ({', '.join(present) if present else 'no avx2'})"


def machine() -> str:
    """CPU model and flags, CPU count, Python version and the 1-minute load at the time of the
    run."""
    cpuinfo = ""
    with contextlib.suppress(OSError):
        cpuinfo = Path("/proc/cpuinfo").read_text()
    load = os.getloadavg()[0]
    return (
        f"{cpu(cpuinfo)}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {load:.2f}"
    )


def percentile(values: list[float], q: float) -> float:
    """The value at quantile ``q`` (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def wait_http(url: str, timeout_s: float = 180.0, proc: subprocess.Popen | None = None) -> None:
    """Wait until ``url`` answers with anything but a 5xx."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code < 500:
                return
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not come up")


@contextlib.contextmanager
def process(argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """A child process for the duration of the block, stopped (then killed) after it."""
    proc = subprocess.Popen(argv, env=env, cwd=REPO)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def create_token_and_sandbox_account(name: str, base_url: str | None = None) -> tuple[str, str]:
    """Migrate the configured database, then create an API token and a ``sandbox`` account
    (its upstream at ``base_url`` when given); returns (token secret, account id)."""
    from core.settings import get_settings
    from platform_api.db import migrate, session_scope
    from platform_api.services import accounts
    from platform_api.services.installed_integrations import find_installed, install
    from platform_api.services.tokens import create_token
    from platform_api.tables.integrated_account import IntegratedAccountUpdate

    settings = get_settings()
    migrate(settings)
    with session_scope(settings) as session:
        _, secret = create_token(session, environment="development", name=name)
        installed = find_installed(
            session, environment_id="development", integration_name="sandbox"
        ) or install(session, environment_id="development", integration_name="sandbox")
        session.flush()
        account = accounts.create_account(
            session,
            installed=installed,
            tenant_id=name,
            credentials={"api_key": "sk_sandbox_demo"},
            settings=settings,
        )
        session.flush()
        if base_url is not None:
            accounts.update_account(
                session,
                account=account,
                update=IntegratedAccountUpdate(override={"base_url": base_url}),
                settings=settings,
            )
        return secret, account.id


def _is_heading_of(line: str, heading: str) -> bool:
    # The heading itself, or it followed by " — " and the date: "## Inference" must not take
    # "## Inference shadow — ..." for its own.
    line = line.rstrip()
    return line == heading or line.startswith(heading + " — ")


def write_section(heading: str, section: str, results: Path = RESULTS) -> None:
    """Put ``section`` (markdown starting with its ``## `` heading line) into ``results`` in
    place of the benchmark's previous section, or at the end when there is none.

    ``heading`` is the benchmark's stable heading, without the date: a section is the
    benchmark's when its heading line is ``heading`` or starts with ``heading + " — "``, and it
    runs to the next ``## `` heading or the end of the file. Sections of the same benchmark
    after the first are removed (git keeps them); everything else is left byte for byte.
    """
    body = section.strip("\n")
    if not _is_heading_of(body.split("\n", 1)[0], heading):
        # The next run would not find it and would add a second section.
        raise ValueError(f"the section does not start with {heading!r}: {body[:80]!r}")
    text = "# Benchmark results\n"
    if results.exists():
        # newline="": keep the other sections' bytes as they are, line endings included.
        with results.open(encoding="utf-8", newline="") as f:
            text = f.read()
    lines = text.splitlines(keepends=True)
    starts: list[int] = []
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced  # a "## " line inside a code block is not a heading
        elif not fenced and line.startswith("## "):
            starts.append(i)
    # Each section runs to the next heading; the last to the end (no headings: no sections).
    spans = list(zip(starts, [*starts[1:], len(lines)][: len(starts)], strict=True))
    own = [(start, end) for start, end in spans if _is_heading_of(lines[start], heading)]
    if not own:
        out = text.rstrip("\n") + "\n\n" + body + "\n"
    else:
        kept: list[str] = []
        position = 0
        for start, end in own:
            kept += lines[position:start]
            if start == own[0][0]:
                kept.append(body + ("\n\n" if end < len(lines) else "\n"))
            position = end
        kept += lines[position:]
        out = "".join(kept)
        if own[-1][1] == len(lines):
            out = out.rstrip("\n") + "\n"  # a removed last section leaves no blank tail
    with results.open("w", encoding="utf-8", newline="") as f:
        f.write(out)


def _headings(lines: list[str], marker: str) -> list[int]:
    """Indexes of the lines that start with ``marker`` ("## ", "### ") outside code blocks."""
    found: list[int] = []
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith(marker):
            found.append(i)
    return found


def _spans(starts: list[int], end: int) -> list[tuple[int, int]]:
    """Each heading's lines: from it to the next heading, the last one to ``end``."""
    return list(zip(starts, [*starts[1:], end], strict=False))


def read_section(heading: str, results: Path = RESULTS) -> str | None:
    """The benchmark's section of ``results`` as ``write_section`` finds it (its heading line
    up to the next ``## `` heading), or None when it has none."""
    if not results.exists():
        return None
    with results.open(encoding="utf-8", newline="") as f:
        lines = f.read().splitlines(keepends=True)
    starts = _headings(lines, "## ")
    for start, end in _spans(starts, len(lines)):
        if _is_heading_of(lines[start], heading):
            return "".join(lines[start:end])
    return None


def replace_subsection(section: str, subheading: str, body: str) -> str:
    """``section`` with its ``### `` subsection ``subheading`` (the heading line, or it followed
    by " — " and a date) replaced by ``body``, or with ``body`` added at its end; everything
    else kept. A benchmark that measures several setups keeps each one's latest result so."""
    lines = section.strip("\n").splitlines(keepends=True)
    lines[-1] = lines[-1].rstrip("\n") + "\n"
    spans = _spans(_headings(lines, "### "), len(lines))
    own = next(((s, e) for s, e in spans if _is_heading_of(lines[s], subheading)), None)
    new = body.strip("\n") + "\n"
    if own is None:
        return "".join(lines).rstrip("\n") + "\n\n" + new
    start, end = own
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + new + ("\n" + tail if tail else "")
