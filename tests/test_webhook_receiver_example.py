"""The receiver docs/webhooks.md ships verifies signatures and drops duplicates."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from standardwebhooks import Webhook

from tests.conftest import free_port

RECEIVER = Path(__file__).resolve().parent.parent / "docs" / "examples" / "webhook_receiver.py"
SECRET = "whsec_" + base64.b64encode(b"a secret of thirty-two bytes!!!!").decode()


def _signed(event_id: str, body: bytes, secret: str = SECRET) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(event_id, now, body.decode()),
        "content-type": "application/json",
    }


def test_the_receiver_accepts_signed_events_once_and_refuses_bad_signatures() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(RECEIVER), "--port", str(port), "--secret", SECRET],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/hooks/switchyard"
    try:
        for _ in range(100):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        body = json.dumps({"id": "evt_1", "event": "webhook:test", "payload": {}}).encode()
        first = httpx.post(url, content=body, headers=_signed("evt_1", body))
        again = httpx.post(url, content=body, headers=_signed("evt_1", body))
        other_secret = "whsec_" + base64.b64encode(b"another secret, thirty-two bytes").decode()
        forged = httpx.post(url, content=body, headers=_signed("evt_2", body, other_secret))
        tampered = httpx.post(url, content=body + b" ", headers=_signed("evt_3", body))
    finally:
        proc.terminate()
        printed, _ = proc.communicate(timeout=10)
    assert first.status_code == 200 and first.json() == {"ok": True}
    assert again.status_code == 200 and again.json() == {"duplicate": True}
    assert forged.status_code == 400 and tampered.status_code == 400
    assert printed.splitlines()[0] == "webhook:test evt_1"
    assert printed.count("evt_1\n") == 1 and "evt_2" not in printed and "evt_3" not in printed
