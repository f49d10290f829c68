"""Without RAY_ADDRESS (and no Ray in the process) the client never guesses a cluster."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import asyncio
from serving.client import ClassifierClient, ClassifierUnavailable, ClientOptions
from core.settings import Settings
options = ClientOptions.from_settings(Settings(ray_address=None))
client = ClassifierClient(options)
assert asyncio.run(client.ready()) is False
try:
    asyncio.run(client.classify([("where is my order", None)]))
except ClassifierUnavailable as exc:
    assert "RAY_ADDRESS" in str(exc)
else:
    raise AssertionError("classify should fail without a cluster")
import ray
assert not ray.is_initialized(), "no cluster was joined or started"
print("ok")
"""


def test_client_without_a_configured_cluster_is_not_ready_and_joins_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
