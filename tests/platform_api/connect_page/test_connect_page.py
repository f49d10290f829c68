"""The connect page in a real browser (Playwright driving Debian's Chromium): a customer
connects an account, sees plain-words errors, and an app connects one through connect.js in a
popup from another origin. A screenshot of each state goes to the test output directory."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, expect

from core.settings import get_settings
from platform_api.db import session_scope
from platform_api.tables.common import utcnow
from platform_api.tables.integrated_account import IntegratedAccount
from platform_api.tables.link_token import LinkToken
from sandbox import app as sandbox_app
from tests.conftest import ServerThread
from tests.platform_api.connect_page.conftest import Shots
from tests.platform_api.factories import install, link_token

pytestmark = pytest.mark.db


def _accounts(client: TestClient, headers: dict[str, str]) -> list[dict]:
    return client.get("/v1/integrated-account", headers=headers).json()["result"]


def _open(page: Page, base_url: str, token: str) -> None:
    page.goto(f"{base_url}/connect-account?link_token={token}")


def test_a_customer_connects_with_an_api_key(
    page: Page, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    install(client, auth_headers, "sandbox")
    install(client, auth_headers, "shopify")
    token = link_token(client, auth_headers, tenant_id="acme")
    _open(page, live, token)
    expect(page.get_by_role("heading", name="Connect your account")).to_be_visible()
    shots.take(page, "1-choose")
    page.get_by_role("button", name="Sandbox WMS").click()
    key = page.get_by_label("Sandbox API key")
    expect(key).to_be_focused()
    key.fill(sandbox_app.DEMO_KEY)
    shots.take(page, "2-form")
    page.keyboard.press("Enter")  # keyboard only
    expect(page.get_by_role("heading", name="Connected")).to_be_visible()
    expect(page.get_by_text("Your Sandbox WMS account is connected")).to_be_visible()
    shots.take(page, "3-done")
    [account] = _accounts(client, auth_headers)
    assert account["tenant_id"] == "acme" and account["integration"]["name"] == "sandbox"


def test_a_wrong_key_is_explained_and_creates_nothing(
    page: Page, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    install(client, auth_headers, "sandbox")
    token = link_token(client, auth_headers, tenant_id="acme", integration_name="sandbox")
    _open(page, live, token)
    page.get_by_label("Sandbox API key").fill("sk_sandbox_revoked")
    page.get_by_role("button", name="Connect Sandbox WMS").click()
    expect(page.get_by_role("status")).to_contain_text("Sandbox WMS did not accept these details")
    shots.take(page, "wrong-key")
    assert _accounts(client, auth_headers) == []
    # The same link still works with the right key.
    page.get_by_label("Sandbox API key").fill(sandbox_app.DEMO_KEY)
    page.get_by_role("button", name="Connect Sandbox WMS").click()
    expect(page.get_by_role("heading", name="Connected")).to_be_visible()


def test_a_token_for_one_integration_shows_only_its_form_and_checks_patterns(
    page: Page, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    install(client, auth_headers, "sandbox")
    install(client, auth_headers, "shopify")
    token = link_token(client, auth_headers, tenant_id="acme", integration_name="shopify")
    _open(page, live, token)
    expect(page.get_by_role("heading", name="Shopify")).to_be_visible()
    expect(page.get_by_role("button", name="Sandbox WMS")).to_have_count(0)
    page.get_by_label("Shop subdomain").fill("Not A Shop!")
    page.get_by_label("Admin API access token").fill("shpat_123")
    page.get_by_role("button", name="Connect Shopify").click()
    expect(page.get_by_role("status")).to_contain_text("Shop subdomain is missing or not in the")
    expect(page.get_by_label("Shop subdomain")).to_be_focused()
    shots.take(page, "one-integration-pattern")
    assert _accounts(client, auth_headers) == []


@pytest.mark.parametrize(("state", "words"), [("expired", "has expired"),
                                             ("used", "was already used")])  # fmt: skip
def test_an_expired_or_used_link_says_so(
    page: Page, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots,
    state: str, words: str,
) -> None:  # fmt: skip
    install(client, auth_headers, "sandbox")
    token = link_token(client, auth_headers, tenant_id="acme")
    change = {"expired": {"expires_at": utcnow() - timedelta(minutes=1)},
              "used": {"used_at": utcnow()}}[state]  # fmt: skip
    with session_scope(get_settings()) as session:
        session.execute(sa.update(LinkToken).values(**change))
    _open(page, live, token)
    expect(page.get_by_role("status")).to_contain_text(f"This link cannot be used: it {words}")
    expect(page.locator("form")).to_be_hidden()
    shots.take(page, f"link-{state}")


def test_a_needs_reauth_account_is_reconnected(
    page: Page, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    install(client, auth_headers, "sandbox")
    first = link_token(client, auth_headers, tenant_id="acme")
    _open(page, live, first)
    page.get_by_label("Sandbox API key").fill(sandbox_app.DEMO_KEY)
    page.get_by_role("button", name="Connect Sandbox WMS").click()
    expect(page.get_by_role("heading", name="Connected")).to_be_visible()
    [account] = _accounts(client, auth_headers)
    with session_scope(get_settings()) as session:
        session.execute(sa.update(IntegratedAccount).values(status="needs_reauth"))

    token = link_token(client, auth_headers, integrated_account_id=account["id"])
    _open(page, live, token)
    expect(page.get_by_role("heading", name="Reconnect your account")).to_be_visible()
    shots.take(page, "reauthorize")
    page.get_by_label("Sandbox API key").fill(sandbox_app.DEMO_KEY)
    page.get_by_role("button", name="Connect Sandbox WMS").click()
    expect(page.get_by_role("heading", name="Connected")).to_be_visible()
    [after] = _accounts(client, auth_headers)
    assert after["id"] == account["id"] and after["status"] == "active"


def _customer_app(switchyard: str) -> FastAPI:
    """An integrator's page on another origin embedding connect.js (as docs/integrations.md
    shows it)."""
    app = FastAPI()

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return f"""<!doctype html><html><body>
<button id="connect">Connect your WMS</button> <p id="result"></p>
<script src="{switchyard}/connect.js"></script>
<script>
  document.getElementById("connect").onclick = async () => {{
    const token = new URLSearchParams(location.search).get("token");
    try {{
      const account = await Switchyard.connect({{ linkToken: token }});
      document.getElementById("result").textContent =
        "connected " + account.integrated_account_id + " " + account.integration.name;
    }} catch (error) {{
      document.getElementById("result").textContent = "failed: " + error.message;
    }}
  }};
</script></body></html>"""

    return app


def test_connect_js_connects_in_a_popup_from_another_origin(
    browser: Browser, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    install(client, auth_headers, "sandbox")
    with ServerThread(_customer_app(live)) as customer:
        assert customer.url != live  # another port: another origin
        page = browser.new_page()
        token = link_token(client, auth_headers, tenant_id="acme", integration_name="sandbox")
        page.goto(f"{customer.url}/?token={token}")
        with page.expect_popup() as opened:
            page.get_by_role("button", name="Connect your WMS").click()
        popup = opened.value
        popup.get_by_label("Sandbox API key").fill(sandbox_app.DEMO_KEY)
        shots.take(popup, "popup")
        popup.get_by_role("button", name="Connect Sandbox WMS").click()
        expect(page.locator("#result")).to_contain_text("connected acct_")
        [account] = _accounts(client, auth_headers)
        expect(page.locator("#result")).to_have_text(f"connected {account['id']} sandbox")
        shots.take(page, "popup-resolved")

        # Closing the window first rejects the promise.
        other = link_token(client, auth_headers, tenant_id="acme-2", integration_name="sandbox")
        page.goto(f"{customer.url}/?token={other}")
        with page.expect_popup() as opened:
            page.get_by_role("button", name="Connect your WMS").click()
        opened.value.close()
        expect(page.locator("#result")).to_have_text(
            "failed: the connect window was closed before connecting"
        )
        page.close()


def test_the_page_is_locked_down(client: TestClient) -> None:
    response = client.get("/connect-account", params={"link_token": "lt_x"})
    assert response.status_code == 200 and "text/html" in response.headers["content-type"]
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-store"
    assert "http" not in response.text.replace("http-equiv", "")  # nothing from elsewhere
    assert client.get("/connect-account/assets/../app.py").status_code == 404
    library = client.get("/connect.js")
    assert library.status_code == 200 and "Switchyard" in library.text


def test_an_oauth_integration_connects_through_connect_js_with_pkce(
    browser: Browser, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots,
    sandbox: ServerThread,
) -> None:  # fmt: skip
    install(client, auth_headers, "sandbox_oauth")
    with ServerThread(_customer_app(live)) as customer:
        page = browser.new_page()
        oauth_only = {"integration_name": "sandbox_oauth"}
        token = link_token(client, auth_headers, tenant_id="acme", **oauth_only)
        page.goto(f"{customer.url}/?token={token}")
        with page.expect_popup() as opened:
            page.get_by_role("button", name="Connect your WMS").click()
        popup = opened.value
        popup.get_by_role("button", name="Continue with Sandbox WMS (OAuth)").click()
        expect(popup.get_by_role("heading", name="Allow Switchyard")).to_be_visible()
        assert popup.url.startswith(sandbox.url + "/oauth/authorize")
        assert (
            "code_challenge_method=S256" in popup.url
            and "client_id=switchyard-sandbox" in popup.url
        )
        shots.take(popup, "oauth-consent")
        popup.get_by_role("button", name="Allow").click()
        expect(page.locator("#result")).to_contain_text("connected acct_")
        [account] = _accounts(client, auth_headers)
        expect(page.locator("#result")).to_have_text(f"connected {account['id']} sandbox_oauth")
        # The stored tokens work: a unified call with them reaches the sandbox.
        params = {"integrated_account_id": account["id"], "limit": 2}
        orders = client.get("/v1/unified/wms/orders", headers=auth_headers, params=params)
        assert orders.status_code == 200 and len(orders.json()["result"]) == 2
        assert sandbox.app.state.oauth.token_requests == ["authorization_code"]

        # Declining at the provider rejects the promise with the reason, creating nothing.
        other = link_token(
            client, auth_headers, tenant_id="acme-2", integration_name="sandbox_oauth"
        )
        page.goto(f"{customer.url}/?token={other}")
        with page.expect_popup() as opened:
            page.get_by_role("button", name="Connect your WMS").click()
        popup = opened.value
        popup.get_by_role("button", name="Continue with Sandbox WMS (OAuth)").click()
        popup.get_by_role("button", name="Deny").click()
        expect(page.locator("#result")).to_have_text(
            "failed: access was not granted at Sandbox WMS (OAuth)"
        )
        expect(popup.get_by_role("status")).to_contain_text("Access was not granted")
        shots.take(popup, "oauth-denied")
        assert len(_accounts(client, auth_headers)) == 1
        page.close()


def _listener_app() -> FastAPI:
    """An opener on another origin that opens ``?open=<url>`` in a popup and lists every
    message the popup posts to it."""
    app = FastAPI()

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return """<!doctype html><html><body>
<button id="open">Open</button> <ol id="log"></ol>
<script>
  document.getElementById("open").onclick = () => {
    window.open(new URLSearchParams(location.search).get("open"), "_blank", "popup");
  };
  window.addEventListener("message", (event) => {
    const data = event.data || {};
    const item = document.createElement("li");
    item.textContent = [data.type, data.integrated_account_id || data.message]
      .filter(Boolean).join(" ");
    document.getElementById("log").append(item);
  });
</script></body></html>"""

    return app


def _open_popup(opener: Page, listener: str, url: str) -> Page:
    opener.goto(f"{listener}/?{urlencode({'open': url})}")
    with opener.expect_popup() as opened:
        opener.get_by_role("button", name="Open").click()
    return opened.value


def _messages_so_far(opener: Page, popup: Page) -> list[str]:
    """Every message the popup has posted: a probe sent last arrives after all of them."""
    count = opener.locator("#log li").count()
    popup.evaluate("window.opener.postMessage({ type: 'probe' }, '*')")
    expect(opener.locator("#log li")).to_have_count(count + 1)
    texts = opener.locator("#log li").all_text_contents()
    assert texts[-1] == "probe"
    return [text for text in texts if text != "probe"]


def test_a_forged_outcome_url_reports_nothing_to_the_opener(
    browser: Browser, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    with ServerThread(_listener_app()) as listener:
        opener = browser.new_page()
        forged = {
            "oauth_result": "connected",
            "integrated_account_id": "acct_forged",
            "integration": "sandbox_oauth",
            "label": "Sandbox WMS",
            "origin": listener.url,
        }
        popup = _open_popup(opener, listener.url, f"{live}/connect-account?{urlencode(forged)}")
        expect(popup.get_by_role("status")).to_contain_text("already shown")
        expect(popup.get_by_role("heading", name="Connected")).to_be_hidden()
        shots.take(popup, "forged-outcome")
        assert _messages_so_far(opener, popup) == []
        opener.close()


def test_a_real_oauth_result_is_reported_once_and_a_replay_reports_nothing(
    browser: Browser, live: str, client: TestClient, auth_headers: dict[str, str], shots: Shots
) -> None:
    install(client, auth_headers, "sandbox_oauth")
    token = link_token(client, auth_headers, tenant_id="acme", integration_name="sandbox_oauth")
    with ServerThread(_listener_app()) as listener:
        opener = browser.new_page()
        page_url = (
            f"{live}/connect-account?{urlencode({'link_token': token, 'origin': listener.url})}"
        )
        popup = _open_popup(opener, listener.url, page_url)
        popup.get_by_role("button", name="Continue with Sandbox WMS (OAuth)").click()
        popup.get_by_role("button", name="Allow").click()
        expect(popup.get_by_role("heading", name="Connected")).to_be_visible()
        [account] = _accounts(client, auth_headers)
        assert _messages_so_far(opener, popup) == [f"switchyard:connected {account['id']}"]
        result_url = popup.url
        assert "oauth_result=" in result_url and account["id"] not in result_url

        # The same result again (a reload, or the URL replayed elsewhere): nothing reported.
        replay = _open_popup(opener, listener.url, result_url)
        expect(replay.get_by_role("status")).to_contain_text("already shown")
        shots.take(replay, "replayed-result")
        assert _messages_so_far(opener, replay) == []
        opener.close()
