"""Encryption at rest for integration credentials (Fernet, with key rotation).

``encryption_key`` may list several comma-separated keys: the first encrypts, every one
decrypts (``MultiFernet``), which is how a rotation keeps old values readable until
``switchyard keys rotate`` has re-encrypted them. Unset, the keys live in
``var_dir/encryption.key`` (one per line, mode 0600), a development fallback that production
mode refuses (``MissingEncryptionKey``).
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import structlog
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from core.settings import Settings

log = structlog.get_logger(__name__)

KEY_FILE = "encryption.key"


class MissingEncryptionKey(RuntimeError):
    """Production mode without SWITCHYARD_ENCRYPTION_KEY: no key file is generated there."""

    def __init__(self) -> None:
        super().__init__(
            "SWITCHYARD_ENCRYPTION_KEY must be set in production mode (SWITCHYARD_MODE="
            "production): credentials at rest are not encrypted with a generated key file"
        )


def require_key_in_production(settings: Settings) -> None:
    """The start-up check of the processes that read credentials: fail before serving."""
    if settings.mode == "production" and not settings.encryption_key:
        raise MissingEncryptionKey()


def key_file(settings: Settings) -> Path:
    return settings.var_dir / KEY_FILE


def _staged_key_file(path: Path, keys: list[bytes]) -> Path:
    """A new file beside ``path`` holding ``keys``, owner-only (0600) from the first byte.

    Its name is unique, so two writers never share (or delete) each other's staging file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=path.name + ".", suffix=".new", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(b"\n".join(keys) + b"\n")
    return Path(staging)


def write_key_file(path: Path, keys: list[bytes]) -> None:
    """Replace the key file atomically, owner-only (0600) from the first byte."""
    os.replace(_staged_key_file(path, keys), path)


def _read_keys(path: Path) -> list[bytes]:
    return [line.strip() for line in path.read_bytes().splitlines() if line.strip()]


def _create_key_file(path: Path) -> list[bytes] | None:
    """Create the key file with a new key unless it exists; the keys now in it, or None if
    it exists but is empty.

    ``os.link`` fails when the name exists, so of processes starting together exactly one
    creates the file and the others read that one's key: two processes can never each
    encrypt with a key of their own that the other's file replaced."""
    key = Fernet.generate_key()
    staging = _staged_key_file(path, [key])
    try:
        os.link(staging, path)
    except FileExistsError:
        return _read_keys(path) or None
    finally:
        staging.unlink()
    log.warning(
        "encryption_key_generated",
        path=str(path),
        mode="0600",
        hint="development fallback: set SWITCHYARD_ENCRYPTION_KEY in production, "
        "and back the key up (credentials cannot be read without it)",
    )
    return [key]


def _load_or_create_dev_keys(settings: Settings) -> list[bytes]:
    path = key_file(settings)
    if path.exists() and (keys := _read_keys(path)):
        return keys
    created = _create_key_file(path)
    if created is not None:
        return created
    # An empty file (never written by this module: a key file is linked in whole): replace it.
    key = Fernet.generate_key()
    write_key_file(path, [key])
    return [key]


def configured_keys(settings: Settings) -> list[bytes]:
    """The keys in force, the encrypting one first."""
    if settings.encryption_key:
        return [k.strip().encode() for k in settings.encryption_key.split(",") if k.strip()]
    require_key_in_production(settings)
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
