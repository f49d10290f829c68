"""Why the model is not serving, in one line: read from Serve's own application status.

Serve reports a failed build or replica with a whole traceback (often two, nested); a person
starting the service needs its last line, the cause, and what to do about it.
"""

from __future__ import annotations

import re

# The line an exception ends a traceback with: "ModuleNotFoundError: No module named 'onnx'".
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception|Exit)): ?(.*)$"
)


def short_cause(message: str) -> str:
    """The last exception named in ``message`` (its text, or its type when it has none);
    the message's last line when it names none."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        match = _EXCEPTION_LINE.match(line)
        if match and not match.group(2).startswith("Traceback"):
            return match.group(2) or match.group(1)
    return lines[-1] if lines else "no reason given"


def what_to_do(cause: str) -> str:
    """A next step for a deployment that failed with ``cause``."""
    if cause.startswith("No module named"):
        return (
            "a package is missing from this install: "
            "run `.venv/bin/pip install -e .` and start again"
        )
    if "model" in cause.lower() and ("No such file" in cause or "not found" in cause.lower()):
        return "check SWITCHYARD_MODEL_DIR / SWITCHYARD_MODELS_ROOT and models/LATEST"
    return "the platform API keeps serving; fix the cause and start again"


def not_ready_reason(app_name: str) -> str | None:
    """Why Serve's application ``app_name`` is not serving, from its status (None: it is
    RUNNING, as far as Serve knows). Needs a connection to the cluster."""
    from ray import serve

    status = serve.status().applications.get(app_name)
    if status is None:
        return f"no Serve application {app_name!r} is deployed"
    state = getattr(status.status, "value", str(status.status))
    if state == "RUNNING":
        return None
    if state in ("DEPLOY_FAILED", "UNHEALTHY"):
        kind = "failed" if state == "DEPLOY_FAILED" else "unhealthy"
        return f"model deployment {kind}: {short_cause(status.message or state)}"
    return f"model deployment {state.lower().replace('_', ' ')}"
