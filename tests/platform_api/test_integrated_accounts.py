"""Integrated accounts over HTTP: read, list with filters and pagination, update, delete with
everything that refers to them, and the helpers the unified-API engine relies on."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlmodel import SQLModel, select

from core.errors import ApiError
from core.settings import get_settings
from platform_api.db import get_engine, session_scope
from platform_api.ids import new_id
from platform_api.services import accounts
from platform_api.services.cascade import delete_with_dependents
from platform_api.tables.common import utcnow
from platform_api.tables.installed_integration import InstalledIntegration
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.link_token import LinkToken
from platform_api.tables.outbox import OutboxEvent
from tests.assertions import assert_error
from tests.platform_api.factories import (
    bearer,
    collect_pages,
    connect,
    install,
    link_token,
)

pytestmark = pytest.mark.db

URL = "/v1/integrated-account"


def _add_accounts(installed_id: str, count: int, *, tenant: str = "bulk") -> list[str]:
    """Accounts created straight through the service (fast), in creation order."""
    settings = get_settings()
    with session_scope(settings) as session:
        installed = session.get(InstalledIntegration, installed_id)
        assert installed is not None
        return [
            accounts.create_account(
                session,
                installed=installed,
                tenant_id=f"{tenant}-{i}",
                credentials={"k": "v"},
                settings=settings,
            ).id
            for i in range(count)
        ]


@pytest.fixture
def shopify(client: TestClient, auth_headers: dict[str, str]) -> dict:
    return install(client, auth_headers, "shopify")


def test_account_record_shape(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    account_id = connect(client, auth_headers, tenant_id="tenant-7")
    record = client.get(f"{URL}/{account_id}", headers=auth_headers).json()
    assert record["id"] == account_id and account_id.startswith("acct_")
    assert record["tenant_id"] == "tenant-7"
    assert record["integration"] == {"name": "shopify", "label": "Shopify", "category": "wms"}
    assert record["status"] == "active"
    assert record["context"] == {} and record["override"] == {}
    assert record["created_at"].endswith("Z") and record["updated_at"].endswith("Z")
    assert "credentials" not in record and "credentials_encrypted" not in record


def test_another_environments_account_is_not_found(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    production = bearer(make_token("production"))
    install(client, production, "shopify")
    account_id = connect(client, production)
    staging = bearer(make_token("staging"))
    for method, kwargs in (("GET", {}), ("PATCH", {"json": {"context": {"a": 1}}}), ("DELETE", {})):
        for target in (account_id, "acct_missing"):
            response = client.request(method, f"{URL}/{target}", headers=staging, **kwargs)
            body = assert_error(response, 404, "NOT_FOUND")
            assert body["message"] == f"integrated account {target} not found"
    assert client.get(URL, headers=staging).json() == {"result": [], "next_cursor": None}
    untouched = client.get(f"{URL}/{account_id}", headers=production).json()
    assert untouched["context"] == {}


def test_list_filters_by_integration_and_tenant(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    install(client, auth_headers, "pipedrive")
    a = connect(client, auth_headers, tenant_id="alice")
    b = connect(client, auth_headers, tenant_id="bob")
    c = connect(
        client,
        auth_headers,
        tenant_id="alice",
        integration_name="pipedrive",
        credentials={"api_token": "p"},
    )

    def ids(**params: str) -> list[str]:
        body = client.get(URL, params=params, headers=auth_headers).json()
        assert body["next_cursor"] is None
        return [r["id"] for r in body["result"]]

    assert ids() == [a, b, c]
    assert ids(**{"integration.name": "shopify"}) == [a, b]
    assert ids(tenant_id="alice") == [a, c]
    assert ids(**{"integration.name": "pipedrive", "tenant_id": "alice"}) == [c]
    assert ids(tenant_id="nobody") == []


def test_pages_are_stable_when_accounts_are_added_between_pages(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    created = _add_accounts(shopify["id"], 5)
    seen: list[str] = []
    first = client.get(URL, params={"limit": 2}, headers=auth_headers).json()
    seen += [r["id"] for r in first["result"]]
    created += _add_accounts(shopify["id"], 3, tenant="late")
    cursor = first["next_cursor"]
    pages = 1
    while cursor:
        page = client.get(URL, params={"limit": 2, "next_cursor": cursor}, headers=auth_headers)
        body = page.json()
        seen += [r["id"] for r in body["result"]]
        cursor = body["next_cursor"]
        pages += 1
        if pages == 2:
            created += _add_accounts(shopify["id"], 2, tenant="later")
    # Every account once, none skipped or repeated, in id order (ids sort by creation time at
    # millisecond resolution, so accounts made within one millisecond sort among themselves).
    assert seen == sorted(created)
    assert pages == 5


def test_filtered_pagination_walks_only_matching_accounts(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    _add_accounts(shopify["id"], 3, tenant="x")
    settings = get_settings()
    with session_scope(settings) as session:
        installed = session.get(InstalledIntegration, shopify["id"])
        assert installed is not None
        wanted = [
            accounts.create_account(
                session, installed=installed, tenant_id="target", credentials={}, settings=settings
            ).id
            for _ in range(5)
        ]
    _add_accounts(shopify["id"], 3, tenant="z")
    items = collect_pages(client, URL, auth_headers, limit=2, params={"tenant_id": "target"})
    assert [i["id"] for i in items] == sorted(wanted)


def test_default_page_size_is_50_and_maximum_200(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    _add_accounts(shopify["id"], 51)
    first = client.get(URL, headers=auth_headers).json()
    assert len(first["result"]) == 50 and first["next_cursor"] is not None
    second = client.get(URL, params={"next_cursor": first["next_cursor"]}, headers=auth_headers)
    assert len(second.json()["result"]) == 1 and second.json()["next_cursor"] is None
    everything = client.get(URL, params={"limit": 200}, headers=auth_headers).json()
    assert len(everything["result"]) == 51 and everything["next_cursor"] is None
    for limit in ("0", "201"):
        response = client.get(URL, params={"limit": limit}, headers=auth_headers)
        assert "limit" in assert_error(response, 400, "INVALID_REQUEST")["message"]


def test_tampered_and_foreign_cursors_are_rejected(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    development = bearer(make_token("development"))
    staging = bearer(make_token("staging"))
    for headers in (development, staging):
        installed = install(client, headers, "shopify")
        _add_accounts(installed["id"], 3)
    cursor = client.get(URL, params={"limit": 1}, headers=development).json()["next_cursor"]
    flipped = cursor[:5] + ("A" if cursor[5] != "A" else "B") + cursor[6:]
    cases = [
        (development, {"next_cursor": flipped}),
        (development, {"next_cursor": "not-a-cursor"}),
        (development, {"next_cursor": cursor, "tenant_id": "bulk-1"}),  # another filter
        (staging, {"next_cursor": cursor}),  # another environment
    ]
    for headers, params in cases:
        response = client.get(URL, params=params, headers=headers)
        assert "next_cursor" in assert_error(response, 400, "INVALID_REQUEST")["message"]
    other_list = client.get(
        "/v1/environment-integration", params={"next_cursor": cursor}, headers=development
    )
    assert_error(other_list, 400, "INVALID_REQUEST")


def test_patch_merges_context_and_null_removes_a_key(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    account_id = connect(client, auth_headers)
    url = f"{URL}/{account_id}"
    first = client.patch(url, json={"context": {"region": "eu", "store": 7}}, headers=auth_headers)
    assert first.status_code == 200
    assert first.json()["context"] == {"region": "eu", "store": 7}
    second = client.patch(
        url, json={"context": {"store": None, "locale": "de"}}, headers=auth_headers
    ).json()
    assert second["context"] == {"region": "eu", "locale": "de"}
    assert second["updated_at"] >= first.json()["updated_at"]
    override = client.patch(
        url, json={"override": {"base_url": "http://127.0.0.1:9/fake"}}, headers=auth_headers
    ).json()
    assert override["override"] == {"base_url": "http://127.0.0.1:9/fake"}
    assert override["context"] == {"region": "eu", "locale": "de"}
    assert client.get(url, headers=auth_headers).json() == override
    with session_scope(get_settings()) as session:
        events = session.exec(
            select(OutboxEvent).where(OutboxEvent.event_type == "integrated_account:updated")
        ).all()
    assert [e.payload["context"] for e in events][-1] == {"region": "eu", "locale": "de"}


@pytest.mark.parametrize(
    "body",
    [
        {"context": "text"},
        {"context": [1]},
        {"override": {"base_url": "ftp://x"}},
        {"override": {"base_url": 5}},
        {"status": "active"},
    ],
)
def test_patch_rejects_malformed_bodies(
    client: TestClient, auth_headers: dict[str, str], shopify: dict, body: dict
) -> None:
    account_id = connect(client, auth_headers)
    response = client.patch(f"{URL}/{account_id}", json=body, headers=auth_headers)
    assert_error(response, 400, "INVALID_REQUEST")


def test_delete_removes_the_account_and_what_refers_to_it(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    account_id = connect(client, auth_headers)
    keep_id = connect(client, auth_headers, tenant_id="keep")
    client.patch(f"{URL}/{account_id}", json={"context": {"a": 1}}, headers=auth_headers)
    record = client.get(f"{URL}/{account_id}", headers=auth_headers).json()
    link_token(client, auth_headers, integrated_account_id=account_id)  # a pending reauth
    link_token(client, auth_headers, integrated_account_id=keep_id)

    response = client.delete(f"{URL}/{account_id}", headers=auth_headers)
    assert response.status_code == 204 and response.content == b""
    assert_error(client.get(f"{URL}/{account_id}", headers=auth_headers), 404, "NOT_FOUND")
    assert_error(client.delete(f"{URL}/{account_id}", headers=auth_headers), 404, "NOT_FOUND")
    with session_scope(get_settings()) as session:
        assert session.get(IntegratedAccount, account_id) is None
        tokens = session.exec(select(LinkToken.integrated_account_id)).all()
        assert account_id not in tokens and keep_id in tokens
        deleted = session.exec(
            select(OutboxEvent).where(OutboxEvent.event_type == "integrated_account:deleted")
        ).one()
    assert deleted.payload == record
    assert [r["id"] for r in client.get(URL, headers=auth_headers).json()["result"]] == [keep_id]


@pytest.fixture
def owned_tables() -> Iterator[tuple[sa.MetaData, sa.Table, sa.Table]]:
    """Two extra tables the way later features add them: a log referring to the account and
    an item referring to the log. Created in a copy of the metadata, dropped afterwards."""
    metadata = sa.MetaData()
    for table in SQLModel.metadata.sorted_tables:
        table.to_metadata(metadata)
    log = sa.Table(
        "zz_test_account_log",
        metadata,
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("account", sa.String(40), sa.ForeignKey("integrated_account.id")),
    )
    item = sa.Table(
        "zz_test_account_log_item",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("log_id", sa.String(40), sa.ForeignKey("zz_test_account_log.id")),
    )
    engine = get_engine(get_settings())
    metadata.create_all(engine, tables=[log, item])
    try:
        yield metadata, log, item
    finally:
        metadata.drop_all(engine, tables=[item, log])


def test_delete_cascades_generically_through_tables_added_later(
    client: TestClient,
    auth_headers: dict[str, str],
    shopify: dict,
    owned_tables: tuple[sa.MetaData, sa.Table, sa.Table],
) -> None:
    metadata, log, item = owned_tables
    gone, kept = connect(client, auth_headers), connect(client, auth_headers, tenant_id="k")
    with session_scope(get_settings()) as session:
        session.execute(
            log.insert(), [{"id": "l1", "account": gone}, {"id": "l2", "account": kept}]
        )
        session.execute(item.insert(), [{"id": 1, "log_id": "l1"}, {"id": 2, "log_id": "l2"}])
    accounts_table = metadata.tables["integrated_account"]
    with session_scope(get_settings()) as session:
        delete_with_dependents(
            session, table=accounts_table, where=accounts_table.c.id == gone, metadata=metadata
        )
    with get_engine(get_settings()).connect() as connection:
        assert connection.execute(sa.select(log.c.id)).scalars().all() == ["l2"]
        assert connection.execute(sa.select(item.c.id)).scalars().all() == [2]
    assert client.get(f"{URL}/{kept}", headers=auth_headers).status_code == 200
    assert client.get(f"{URL}/{gone}", headers=auth_headers).status_code == 404


def _filler(column: sa.Column) -> object:
    """A plausible value for a NOT NULL column of any type."""
    kind = column.type
    if isinstance(kind, sa.Boolean):
        return False
    if isinstance(kind, sa.Integer):
        return 1
    if isinstance(kind, sa.Float | sa.Numeric):
        return 1.0
    if isinstance(kind, sa.DateTime):
        return utcnow()
    if isinstance(kind, sa.JSON):
        return {}
    length = getattr(kind, "length", None) or 40
    return new_id("t")[:length]


def _insert_row(connection: sa.Connection, table: sa.Table, account_id: str) -> None:
    """A row of ``table`` referring to ``account_id``, with parent rows made up as needed."""
    row: dict[str, object] = {}
    for column in table.columns:
        targets = {fk.column.table.name: fk.column for fk in column.foreign_keys}
        if "integrated_account" in targets:
            row[column.name] = account_id
        elif "environment" in targets:
            row[column.name] = "development"
        elif targets and not column.nullable:
            [parent_column] = targets.values()
            parent = parent_column.table
            _insert_row(connection, parent, account_id)
            newest = sa.select(parent_column).order_by(parent_column.desc()).limit(1)
            row[column.name] = connection.execute(newest).scalar_one()
        elif column.primary_key and isinstance(column.type, sa.Integer):
            continue
        elif column.primary_key or not column.nullable:
            row[column.name] = _filler(column)
    connection.execute(table.insert().values(**row))


def test_delete_removes_rows_of_every_table_referring_to_accounts(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    """Whatever tables exist now (API log, cached records, runs ...): deleting an account
    deletes the rows that refer to it and keeps other accounts' rows."""
    gone = connect(client, auth_headers)
    kept = connect(client, auth_headers, tenant_id="kept")
    referring = [
        (table, fk.parent)
        for table in SQLModel.metadata.sorted_tables
        for fk in table.foreign_keys
        if fk.column.table.name == "integrated_account"
    ]
    assert {"link_token"} <= {table.name for table, _ in referring}
    with get_engine(get_settings()).begin() as connection:
        for table, _ in referring:
            for account_id in (gone, kept):
                _insert_row(connection, table, account_id)
    assert client.delete(f"{URL}/{gone}", headers=auth_headers).status_code == 204
    with get_engine(get_settings()).connect() as connection:
        for table, column in referring:
            count = sa.select(sa.func.count()).select_from(table).where(column == gone)
            assert connection.execute(count).scalar_one() == 0, table.name
            count = sa.select(sa.func.count()).select_from(table).where(column == kept)
            assert connection.execute(count).scalar_one() >= 1, table.name


def test_engine_helpers_enforce_environment_and_enabled_state(
    client: TestClient, auth_headers: dict[str, str], shopify: dict
) -> None:
    account_id = connect(client, auth_headers)
    with session_scope(get_settings()) as session:
        with pytest.raises(ApiError) as missing:
            accounts.get_account(
                session, environment_id="production", integrated_account_id=account_id
            )
        assert missing.value.status_code == 404
        account = accounts.get_account(
            session, environment_id="development", integrated_account_id=account_id
        )
        assert accounts.ensure_enabled(session, account).id == shopify["id"]
    client.patch(
        f"/v1/environment-integration/{shopify['id']}",
        json={"is_enabled": False},
        headers=auth_headers,
    )
    with session_scope(get_settings()) as session:
        account = accounts.get_account(
            session, environment_id="development", integrated_account_id=account_id
        )
        with pytest.raises(ApiError) as disabled:
            accounts.ensure_enabled(session, account)
    assert (disabled.value.status_code, disabled.value.code) == (403, "INTEGRATION_DISABLED")


def test_account_endpoints_require_an_api_token(client: TestClient) -> None:
    assert_error(client.get(URL), 401, "UNAUTHORIZED")
    assert_error(client.get(f"{URL}/acct_x"), 401, "UNAUTHORIZED")
    assert_error(client.delete(f"{URL}/acct_x"), 401, "UNAUTHORIZED")
