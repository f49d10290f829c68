"""The front shuts down even when a part it closes never answers."""

from __future__ import annotations

import asyncio
import threading

import pytest
from fastapi.testclient import TestClient

from core.settings import Settings
from switchyard import app as app_module
from switchyard.app import create_app
from tests.serving.in_process import FailingClassifier

pytestmark = pytest.mark.db


class HangingClassifier(FailingClassifier):
    """A classifier whose close never returns (a model connection that stopped answering)."""

    async def aclose(self) -> None:
        await asyncio.Event().wait()


def test_shutdown_finishes_when_a_part_never_closes(
    settings: Settings, db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "SHUTDOWN_STEP_S", 0.2)
    app = create_app(settings, classifier=HangingClassifier())
    finished = threading.Event()

    def run() -> None:
        with TestClient(app) as client:
            assert client.get("/healthz").status_code == 200
        finished.set()

    threading.Thread(target=run, daemon=True).start()
    # Without the bound the thread would wait on the close for ever.
    assert finished.wait(timeout=30)
