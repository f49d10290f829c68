"""The API log section: entries appear newest first, filter by account and status class,
page, link from the account page; another environment's entries never appear."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.tables.api_log import ApiLogEntry
from tests.platform_api.console.conftest import Clock, sign_in
from tests.platform_api.console.test_accounts_page import make_account

pytestmark = pytest.mark.db


def log_entry(
    account_id: str,
    clock: Clock,
    *,
    status: int = 200,
    path: str = "/v1/wms/orders",
    environment: str = "development",
    minutes_ago: int = 5,
    error: str | None = None,
) -> str:
    entry_id = new_id("log")
    with session_scope(get_settings()) as session:
        session.add(
            ApiLogEntry(
                id=entry_id,
                environment_id=environment,
                integrated_account_id=account_id,
                kind="unified",
                method="GET",
                path=path,
                status=status,
                upstream_status=status,
                error=error,
                duration_ms=12.4,
                request_id=f"req-{entry_id}",
                created_at=clock.now - timedelta(minutes=minutes_ago),
            )  # fmt: skip
        )
    return entry_id


def test_list_api_log_shows_entries_with_their_columns(
    operator_client: TestClient, clock: Clock
) -> None:
    account = make_account("acme-warehouse")
    entry = log_entry(account, clock, status=502, error="upstream timed out", minutes_ago=3)

    page = operator_client.get("/console/development/api-log")

    assert page.status_code == 200, page.text
    row = page.text[page.text.index(f'<tr id="{entry}">') :].split("</tr>")[0]
    assert "3 min ago" in row and "UTC" in row
    assert "acme-warehouse" in row and f"/console/development/accounts/{account}" in row
    assert "/v1/wms/orders" in row and "unified" in row and "GET" in row
    assert 'class="status status-code5xx">502<' in row
    assert "upstream timed out" in row and f"req-{entry}" in row and ">12<" in row
    assert 'aria-current="page">API log<' in page.text


def test_filter_api_log_by_account_and_status_class(
    operator_client: TestClient, clock: Clock
) -> None:
    acme, globex = make_account("acme-warehouse"), make_account("globex")
    acme_ok = log_entry(acme, clock, status=200)
    acme_missing = log_entry(acme, clock, status=404)
    globex_ok = log_entry(globex, clock, status=201)

    by_account = operator_client.get("/console/development/api-log", params={"account": acme})
    assert acme_ok in by_account.text and acme_missing in by_account.text
    assert globex_ok not in by_account.text

    by_class = operator_client.get("/console/development/api-log", params={"status": "2xx"})
    assert acme_ok in by_class.text and globex_ok in by_class.text
    assert acme_missing not in by_class.text

    both = operator_client.get(
        "/console/development/api-log", params={"account": acme, "status": "4xx"}
    )
    assert acme_missing in both.text and acme_ok not in both.text and globex_ok not in both.text

    refused = operator_client.get("/console/development/api-log", params={"status": "3xx"})
    assert refused.status_code == 400


def test_account_page_links_to_its_api_log(operator_client: TestClient, clock: Clock) -> None:
    account = make_account("acme-warehouse")

    page = operator_client.get(f"/console/development/accounts/{account}")

    assert f'href="/console/development/api-log?account={account}">API log</a>' in page.text


def test_api_log_pages_through_entries(operator_client: TestClient, clock: Clock) -> None:
    account = make_account("acme-warehouse")
    ids = [log_entry(account, clock, minutes_ago=i) for i in range(51)]

    first = operator_client.get("/console/development/api-log", params={"status": "2xx"})
    shown = [i for i in ids if i in first.text]
    assert len(shown) == 50 and "Next page" in first.text
    next_url = first.text.split('">Next page</a>')[0].rsplit('href="', 1)[1].replace("&amp;", "&")
    second = operator_client.get(next_url)
    assert [i for i in ids if i in second.text] == [i for i in ids if i not in shown]


def test_another_environments_api_log_never_appears(
    client: TestClient, clock: Clock, make_operator: Callable[..., str]
) -> None:
    assert sign_in(client, make_operator("ops", ("development",))).status_code == 303
    theirs = make_account("staging-tenant", environment="staging")
    hidden = log_entry(theirs, clock, environment="staging")
    mine = log_entry(make_account("acme-warehouse"), clock, path="/v1/proxy/ping")

    own = client.get("/console/development/api-log")
    assert mine in own.text and hidden not in own.text
    assert hidden not in client.get("/console/development/api-log", params={"account": theirs}).text
    assert client.get("/console/staging/api-log").status_code == 404
