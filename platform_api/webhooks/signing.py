"""Standard Webhooks signing: ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret in the ``whsec_<base64>`` format (32 random bytes)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _key(secret: str) -> bytes:
    raw = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    return base64.b64decode(raw)


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``."""
    to_sign = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), to_sign, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(
    secret: str, msg_id: str, body: bytes, timestamp: int | None = None
) -> dict[str, str]:
    """The three signature headers; the timestamp is now unless given."""
    ts = int(time.time()) if timestamp is None else timestamp
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": sign(secret, msg_id, ts, body),
    }


def envelope_body(
    *,
    event_id: str,
    event_type: str,
    payload: dict[str, Any],
    environment_id: str,
    created_at: str | None,
    webhook_id: str,
) -> bytes:
    """The JSON body of a delivery; identical on every attempt and replay of the event."""
    envelope = {
        "id": event_id,
        "event": event_type,
        "payload": payload,
        "environment_id": environment_id,
        "created_at": created_at,
        "webhook_id": webhook_id,
    }
    return json.dumps(envelope, separators=(",", ":"), default=str).encode()
