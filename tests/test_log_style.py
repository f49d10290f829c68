"""One log style per process: a library's own logger prints like the service's lines."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import logging
from core.log_config import adopt_loggers, configure_logging
configure_logging("INFO", json=True)
ray_like = logging.getLogger("ray")
own = logging.StreamHandler()
own.setFormatter(logging.Formatter("%(asctime)s\\t%(levelname)s %(filename)s -- %(message)s"))
ray_like.addHandler(own)  # what Ray installs on import
ray_like.propagate = False
adopt_loggers("ray")
logging.getLogger("ray._private.worker").warning("SIGTERM handler is not set")
"""


def test_an_adopted_library_logger_prints_json_like_the_service() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    (line,) = result.stderr.strip().splitlines()
    record = json.loads(line)
    assert record["event"] == "SIGTERM handler is not set"
    assert record["logger"] == "ray._private.worker" and record["level"] == "warning"
