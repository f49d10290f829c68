"""Encryption at rest for integration credentials (Fernet, with key rotation).

``encryption_key`` may list several comma-separated keys: the first encrypts, every one
decrypts (``MultiFernet``), which is how a rotation keeps old values readable until
``switchyard keys rotate`` has re-encrypted them. Unset, the keys live in
``var_dir/encryption.key`` (one per line, mode 0600), a development fallback.
"""

from __future__ import annotations

import base64
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import structlog
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from core.settings import Settings

log = structlog.get_logger(__name__)

KEY_FILE = "encryption.key"


def key_file(settings: Settings) -> Path:
    return settings.var_dir / KEY_FILE


def write_key_file(path: Path, keys: list[bytes]) -> None:
    """Replace the key file atomically, owner-only (0600) from the first byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".new")
    staging.unlink(missing_ok=True)
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(b"\n".join(keys) + b"\n")
    os.replace(staging, path)


def _load_or_create_dev_keys(settings: Settings) -> list[bytes]:
    path = key_file(settings)
    if path.exists():
        keys = [line.strip() for line in path.read_bytes().splitlines() if line.strip()]
        if keys:
            return keys
    key = Fernet.generate_key()
    write_key_file(path, [key])
    log.warning(
        "encryption_key_generated",
        path=str(path),
        mode="0600",
        hint="development fallback: set SWITCHYARD_ENCRYPTION_KEY in production, "
        "and back the key up (credentials cannot be read without it)",
    )
    return [key]


def configured_keys(settings: Settings) -> list[bytes]:
    """The keys in force, the encrypting one first."""
    if settings.encryption_key:
        return [k.strip().encode() for k in settings.encryption_key.split(",") if k.strip()]
    return _load_or_create_dev_keys(settings)


@lru_cache(maxsize=4)
def _fernet(keys: tuple[bytes, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def get_fernet(settings: Settings) -> MultiFernet:
    """Encrypts with the first key, decrypts with any."""
    return _fernet(tuple(configured_keys(settings)))


def signing_key(settings: Settings) -> bytes:
    """The signing half of the encrypting key (what ``Fernet`` signs tokens with)."""
    return base64.urlsafe_b64decode(configured_keys(settings)[0])[:16]


def encrypt_json(value: Any, settings: Settings) -> str:
    """Encrypt a JSON-serialisable value to an opaque string."""
    return get_fernet(settings).encrypt(json.dumps(value).encode()).decode()


def decrypt_json(token: str, settings: Settings) -> Any:
    """Decrypt a value written by ``encrypt_json``."""
    try:
        return json.loads(get_fernet(settings).decrypt(token.encode()))
    except InvalidToken as exc:
        raise ValueError("credentials cannot be decrypted with the configured key") from exc
