"""The integrated accounts section: list (search, status filter, pages, relative times, last
call), an account's page without credentials, a reconnect link that works once, deletion after
a confirmation; CSRF and another environment's accounts refused."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from core.errors import ApiError
from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.ids import new_id
from platform_api.services.accounts import create_account, get_account
from platform_api.services.installed_integrations import find_installed, install
from platform_api.tables.api_log import ApiLogEntry
from platform_api.tables.link_token import LinkToken
from tests.platform_api.console.conftest import Clock, csrf_of

pytestmark = pytest.mark.db

SECRET_CREDENTIAL = "sk_do_not_show_me"
_CONNECT_URL = re.compile(r'<code class="secret" id="connect-url">([^<]+)</code>')
_NEXT = re.compile(r'href="([^"]+)">Next page</a>')


def make_account(
    tenant_id: str,
    *,
    environment: str = "development",
    integration: str = "sandbox",
    status: str = "active",
    created_at: datetime | None = None,
) -> str:
    """An account made through the services (its integration installed if need be)."""
    settings = get_settings()
    with session_scope(settings) as session:
        installed = find_installed(
            session, environment_id=environment, integration_name=integration
        ) or install(session, environment_id=environment, integration_name=integration)
        account = create_account(
            session,
            installed=installed,
            tenant_id=tenant_id,
            credentials={"api_key": SECRET_CREDENTIAL},
            settings=settings,
        )
        account.status = status
        if created_at is not None:
            account.created_at = created_at
        return account.id


def log_call(account_id: str, at: datetime, environment: str = "development") -> None:
    with session_scope(get_settings()) as session:
        session.add(
            ApiLogEntry(
                id=new_id("log"),
                environment_id=environment,
                integrated_account_id=account_id,
                kind="unified",
                method="GET",
                path="/v1/wms/orders",
                status=200,
                duration_ms=12.0,
                request_id="req-1",
                created_at=at,
            )  # fmt: skip
        )


def _row(page: str, account_id: str) -> str:
    return page[page.index(f'<tr id="{account_id}">') :].split("</tr>")[0]


def account_exists(account_id: str, environment: str = "development") -> bool:
    with session_scope(get_settings()) as session:
        try:
            get_account(session, environment_id=environment, integrated_account_id=account_id)
        except ApiError:
            return False
        return True


def test_list_shows_tenant_integration_status_and_relative_times(
    operator_client: TestClient, clock: Clock
) -> None:
    called = make_account("customer-1", created_at=clock.now - timedelta(minutes=3))
    quiet = make_account(
        "customer-2", status="needs_reauth", created_at=clock.now - timedelta(days=2)
    )
    log_call(called, clock.now - timedelta(hours=5))
    log_call(called, clock.now - timedelta(minutes=7))  # the newest counts
    page = operator_client.get("/console/development/accounts")
    assert page.status_code == 200
    first = _row(page.text, called)
    assert "customer-1" in first and "Sandbox" in first
    assert '<span class="status status-active">active</span>' in first
    assert "3 min ago" in first and 'title="2026-11-27 08:57:00 UTC"' in first
    assert "7 min ago" in first and "5 h ago" not in first
    second = _row(page.text, quiet)
    assert "status-needs_reauth" in second and "2 d ago" in second and "never" in second
    assert 'aria-current="page">Accounts</a>' in page.text


def test_search_by_tenant_and_filter_by_status(operator_client: TestClient) -> None:
    make_account("alpha")
    make_account("beta", status="needs_reauth")
    by_tenant = operator_client.get("/console/development/accounts?tenant_id=beta").text
    assert ">beta<" in by_tenant and ">alpha<" not in by_tenant
    by_status = operator_client.get("/console/development/accounts?status=active").text
    assert ">alpha<" in by_status and ">beta<" not in by_status
    nothing = operator_client.get("/console/development/accounts?tenant_id=beta&status=active")
    assert "No accounts match" in nothing.text
    assert operator_client.get("/console/development/accounts?status=gone").status_code == 400


def test_pages_follow_the_service_cursor_with_the_filter_kept(
    operator_client: TestClient,
) -> None:
    ids = {make_account(f"tenant-{n:02d}") for n in range(51)}
    make_account("other", status="needs_reauth")
    first = operator_client.get("/console/development/accounts?status=active").text
    link = _NEXT.search(first)
    assert link, first
    url = link.group(1).replace("&amp;", "&")
    assert parse_qs(urlsplit(url).query)["status"] == ["active"]
    second = operator_client.get(url).text
    seen = set(re.findall(r'<tr id="(acct_[^"]+)">', first + second))
    assert seen == ids and not _NEXT.search(second) and "First page" in second


def test_account_page_shows_details_but_never_credentials(operator_client: TestClient) -> None:
    account_id = make_account("customer-9")
    page = operator_client.get(f"/console/development/accounts/{account_id}")
    assert page.status_code == 200
    assert account_id in page.text and "customer-9" in page.text and "never" in page.text
    assert SECRET_CREDENTIAL not in page.text and "credentials_encrypted" not in page.text


def test_reconnect_link_is_shown_once_and_opens_the_connect_session(
    operator_client: TestClient,
) -> None:
    account_id = make_account("customer-3", status="needs_reauth")
    page = operator_client.get(f"/console/development/accounts/{account_id}")
    response = operator_client.post(
        f"/console/development/accounts/{account_id}/reconnect",
        data={"csrf_token": csrf_of(page)},
    )
    assert response.status_code == 201, response.text
    found = _CONNECT_URL.search(response.text)
    assert found, response.text
    link_token = parse_qs(urlsplit(found.group(1)).query)["link_token"][0]
    session = operator_client.get("/connect-account/session", params={"link_token": link_token})
    assert session.status_code == 200, session.text
    with session_scope(get_settings()) as db:
        row = db.exec(select(LinkToken)).one()
        assert row.integrated_account_id == account_id and row.tenant_id == "customer-3"
    assert link_token not in operator_client.get(f"/console/development/accounts/{account_id}").text


def test_reconnect_without_csrf_creates_no_link(operator_client: TestClient) -> None:
    account_id = make_account("customer-4")
    response = operator_client.post(
        f"/console/development/accounts/{account_id}/reconnect", data={"csrf_token": "x"}
    )
    assert response.status_code == 403
    with session_scope(get_settings()) as db:
        assert db.exec(select(LinkToken)).all() == []


def test_delete_asks_first_then_the_account_is_gone(operator_client: TestClient) -> None:
    account_id = make_account("customer-5")
    confirm = operator_client.get(f"/console/development/accounts/{account_id}/delete")
    assert confirm.status_code == 200 and "Delete customer-5?" in confirm.text
    assert account_exists(account_id)  # not yet
    response = operator_client.post(
        f"/console/development/accounts/{account_id}/delete",
        data={"csrf_token": csrf_of(confirm)},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/console/development/accounts?notice=deleted"
    assert not account_exists(account_id)
    after = operator_client.get(response.headers["location"]).text
    assert "The account is deleted" in after and account_id not in after


def test_delete_without_csrf_keeps_the_account(operator_client: TestClient) -> None:
    account_id = make_account("customer-6")
    response = operator_client.post(
        f"/console/development/accounts/{account_id}/delete", data={"csrf_token": "nope"}
    )
    assert response.status_code == 403 and account_exists(account_id)


def test_another_environments_account_is_absent(operator_client: TestClient) -> None:
    theirs = make_account("their-customer", environment="staging")
    assert "their-customer" not in operator_client.get("/console/development/accounts").text
    csrf = csrf_of(operator_client.get("/console/development/accounts"))
    for method, path in [
        ("GET", "/console/staging/accounts"),
        ("GET", f"/console/staging/accounts/{theirs}"),
        ("GET", f"/console/development/accounts/{theirs}"),
        ("POST", f"/console/development/accounts/{theirs}/reconnect"),
        ("GET", f"/console/development/accounts/{theirs}/delete"),
        ("POST", f"/console/development/accounts/{theirs}/delete"),
        ("POST", f"/console/staging/accounts/{theirs}/delete"),
    ]:
        data = {"csrf_token": csrf} if method == "POST" else None
        response = operator_client.request(method, path, data=data)
        assert response.status_code == 404, (method, path, response.text)
        assert "<html" in response.text
    assert account_exists(theirs, "staging")
    with session_scope(get_settings()) as db:
        assert db.exec(select(LinkToken)).all() == []
