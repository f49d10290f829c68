"""Keyset pagination with opaque, signed cursors: ``{result, next_cursor}`` everywhere."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, cast

from fastapi import Depends, Query, Request
from sqlalchemy.orm import Mapped
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, select
from sqlmodel.sql.expression import SelectOfScalar

from core.errors import invalid_request
from core.settings import Settings
from platform_api.crypto import signing_key

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class PageParams:
    limit: int
    next_cursor: str | None
    cursor_key: bytes  # signs and checks this deployment's cursors (``cursor_key``)


def cursor_key(settings: Settings) -> bytes:
    """The key cursors are signed with, derived from the encryption key so cursors survive
    restarts without another secret."""
    return _cursor_key(signing_key(settings))


@lru_cache(maxsize=8)
def _cursor_key(signing: bytes) -> bytes:
    return hashlib.sha256(b"cursor:" + signing).digest()


async def page_params(
    request: Request,
    limit: Annotated[
        int | None,
        Query(
            description=f"Page size, 1 to {MAX_LIMIT}.",
            json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT},
        ),
    ] = None,
    next_cursor: Annotated[str | None, Query(description="Cursor from the previous page.")] = None,
) -> PageParams:
    """Query parameters of every list endpoint."""
    if limit is None:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise invalid_request(f"limit: must be between 1 and {MAX_LIMIT}")
    return PageParams(
        limit=limit,
        next_cursor=next_cursor or None,
        cursor_key=cursor_key(request.app.state.settings),
    )


PageParamsDep = Annotated[PageParams, Depends(page_params)]


def encode_cursor(state: dict[str, Any], scope: str, key: bytes) -> str:
    """An opaque cursor carrying ``state``, valid only for the list named by ``scope``."""
    body = json.dumps({"s": scope, "v": state}, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(key, body, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac + body).decode().rstrip("=")


def decode_cursor(cursor: str, scope: str, key: bytes) -> dict[str, Any]:
    """The state inside ``cursor``; 400 when it was tampered with or belongs to another list."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        mac, body = raw[:16], raw[16:]
        expected = hmac.new(key, body, hashlib.sha256).digest()[:16]
        if not hmac.compare_digest(mac, expected):
            raise ValueError("bad signature")
        data = json.loads(body)
    except (ValueError, TypeError) as exc:
        raise invalid_request("next_cursor: not a valid cursor") from exc
    if data.get("s") != scope:
        raise invalid_request("next_cursor: this cursor belongs to another list or filter")
    return data["v"]


def paginate(
    session: Session,
    statement: SelectOfScalar,
    *,
    id_column: ColumnElement[Any] | Mapped[Any],
    params: PageParams,
    scope: str,
    serialize: Callable[[Any], Any] = lambda row: row,
    descending: bool = False,
) -> dict[str, Any]:
    """Run ``statement`` one keyset page at a time, ordered by ``id_column``.

    ``scope`` names the list and its filters (e.g. ``"account:production:tenant=t1"``) so a
    cursor from one list cannot be replayed against another.
    """
    if params.next_cursor:
        after = decode_cursor(params.next_cursor, scope, params.cursor_key).get("after")
        if not isinstance(after, str):
            raise invalid_request("next_cursor: not a valid cursor")
        statement = statement.where(id_column < after if descending else id_column > after)
    order = id_column.desc() if descending else id_column.asc()
    rows: Sequence[Any] = session.exec(statement.order_by(order).limit(params.limit + 1)).all()
    has_more = len(rows) > params.limit
    rows = rows[: params.limit]
    next_cursor = None
    if has_more and rows:
        last = rows[-1]
        key = str(cast(ColumnElement[Any], id_column).key)
        last_id = getattr(last, key) if hasattr(last, key) else last[0]
        next_cursor = encode_cursor({"after": last_id}, scope, params.cursor_key)
    return {"result": [serialize(row) for row in rows], "next_cursor": next_cursor}


__all__ = ["PageParams", "PageParamsDep", "paginate", "encode_cursor", "decode_cursor", "select"]
