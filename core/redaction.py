"""Connection URLs with their secrets hidden, for anything printed or logged."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

MASK = "***"
_SECRET_PARAMS = {"password", "pass", "passwd", "secret", "token", "sslpassword", "auth"}


def redact_url(url: str | None) -> str:
    """``url`` with any password (and password-like query parameters) replaced by ``***``.

    ``redis://:s3cret@host:6379/0`` -> ``redis://:***@host:6379/0``;
    ``postgresql://app:s3cret@db/app`` -> ``postgresql://app:***@db/app``."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK  # unparseable: print nothing of it
    redacted = url
    if "@" in parts.netloc:
        userinfo, host = parts.netloc.rsplit("@", 1)
        user, has_password, _ = userinfo.partition(":")
        if has_password:
            netloc = f"{user}:{MASK}@{host}"
        else:
            # ``redis://secret@host`` is how many write a Redis password: hide it too.
            netloc = f"{MASK}@{host}" if parts.scheme.startswith("redis") else parts.netloc
        redacted = redacted.replace(parts.netloc, netloc, 1)
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(k.lower() in _SECRET_PARAMS for k, _ in pairs):
            query = urlencode(
                [(k, MASK if k.lower() in _SECRET_PARAMS else v) for k, v in pairs], safe="*"
            )
            redacted = redacted.replace("?" + parts.query, "?" + query, 1)
    return redacted
