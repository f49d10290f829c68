"""Encryption at rest for integration credentials (Fernet)."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from core.settings import Settings


def _load_or_create_dev_key(settings: Settings) -> bytes:
    path = settings.var_dir / "encryption.key"
    if path.exists():
        return path.read_bytes().strip()
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    # Created with owner-only permissions; only a development fallback.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


@lru_cache(maxsize=4)
def _fernet(key: bytes) -> Fernet:
    return Fernet(key)


def get_fernet(settings: Settings) -> Fernet:
    key = (
        settings.encryption_key.encode()
        if settings.encryption_key
        else _load_or_create_dev_key(settings)
    )
    return _fernet(key)


def encrypt_json(value: Any, settings: Settings) -> str:
    """Encrypt a JSON-serialisable value to an opaque string."""
    return get_fernet(settings).encrypt(json.dumps(value).encode()).decode()


def decrypt_json(token: str, settings: Settings) -> Any:
    """Decrypt a value written by ``encrypt_json``."""
    try:
        return json.loads(get_fernet(settings).decrypt(token.encode()))
    except InvalidToken as exc:
        raise ValueError("credentials cannot be decrypted with the configured key") from exc
