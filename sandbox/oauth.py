"""The sandbox's OAuth 2.0 authorization server, so the whole OAuth connect flow runs locally.

Authorization code with PKCE (S256 only), a consent page, refresh tokens that rotate (a spent
refresh token is refused, as providers that rotate do), and revocation (RFC 7009). Access
tokens (``sat_…``) are accepted by the sandbox API until they expire.

Like a real provider it sends codes only to the redirect URIs registered for its client (by
default the service's own callback, from the settings both read: never an open redirect), and
its consent form carries a one-time token tied to a cookie of the browser it was shown to, so
another site cannot post a decision for the user.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from core.settings import get_settings

CLIENT_ID = "switchyard-sandbox"
CLIENT_SECRET = "sandbox-oauth-secret"  # a public demo value, like the sandbox API key
SCOPES = {"store.read", "store.write"}
# The service's redirect URI (platform_api's connect flow), the one its OAuth app registers.
SERVICE_CALLBACK_PATH = "/connect-account/oauth/callback"
CONSENT_TTL_S = 600
CONSENT_COOKIE = "sandbox_consent"


def registered_redirect_uris() -> set[str]:
    """The service's callback at its base URL (loopback unless a public base URL is set);
    read per request, so a test that moves the service's port is followed."""
    return {get_settings().base_url + SERVICE_CALLBACK_PATH}


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class OAuthServer:
    access_ttl_s: int = 3600
    token_delay_s: float = 0.0  # a slow token endpoint (tests: two refreshers overlap)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, float] = field(default_factory=dict)  # token -> expires (epoch s)
    refresh: dict[str, bool] = field(default_factory=dict)  # token -> still usable
    token_requests: list[str] = field(default_factory=list)  # grant types, in order
    # None: the service's callback (``registered_redirect_uris``); tests may name others.
    redirect_uris: set[str] | None = None
    consents: dict[str, dict[str, Any]] = field(default_factory=dict)  # form token -> request
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def access_valid(self, token: str) -> bool:
        with self._lock:
            return self.access.get(token, 0) > time.time()

    def expire_access_tokens(self) -> None:
        """Every access token expires now (tests: the next call must refresh)."""
        with self._lock:
            self.access = dict.fromkeys(self.access, 0.0)

    def issue(self, scope: str = "store.read") -> dict[str, Any]:
        """A fresh token pair, as a completed authorization would give (tests start here)."""
        with self._lock:
            return self._issue(scope)

    def _issue(self, scope: str) -> dict[str, Any]:
        access, refresh = "sat_" + secrets.token_urlsafe(24), "srt_" + secrets.token_urlsafe(24)
        self.access[access] = time.time() + self.access_ttl_s
        self.refresh[refresh] = True
        return {"access_token": access, "refresh_token": refresh, "token_type": "Bearer",
                "expires_in": self.access_ttl_s, "scope": scope}  # fmt: skip

    def install(self, app: FastAPI) -> None:
        """Serve the authorization server's endpoints on ``app``."""
        app.add_api_route(
            "/oauth/authorize", self.authorize, methods=["GET"], response_class=HTMLResponse
        )
        app.add_api_route("/oauth/authorize", self.decide, methods=["POST"])
        app.add_api_route("/oauth/token", self.token, methods=["POST"])
        app.add_api_route("/oauth/revoke", self.revoke, methods=["POST"])

    def _registered(self) -> set[str]:
        return self.redirect_uris if self.redirect_uris is not None else registered_redirect_uris()

    # The endpoints (their docstrings would show in the OpenAPI document, so comments instead).
    # The consent page: the request is kept under a one-time form token, tied to a cookie.
    def authorize(self, request: Request) -> Response:
        query = dict(request.query_params)
        problem = _authorize_problem(query, self._registered())
        if problem:
            # Never redirected: the redirect URI is what is in doubt (RFC 6749 4.1.2.1).
            return HTMLResponse(f"<p>{html.escape(problem)}</p>", status_code=400)
        form_token = secrets.token_urlsafe(24)
        # One cookie per browser, kept across forms: two consent tabs do not undo each other.
        browser = request.cookies.get(CONSENT_COOKIE) or secrets.token_urlsafe(24)
        with self._lock:
            self._forget_expired_consents()
            self.consents[form_token] = {"query": query, "browser": s256(browser),
                                         "expires": time.time() + CONSENT_TTL_S}  # fmt: skip
        page = HTMLResponse(CONSENT.format(scope=html.escape(query.get("scope", "")),
                                           token=html.escape(form_token)))  # fmt: skip
        # Strict: the form posts from this origin only; a cross-site post arrives without it.
        page.set_cookie(CONSENT_COOKIE, browser, max_age=CONSENT_TTL_S, path="/oauth/authorize",
                        httponly=True, samesite="strict")  # fmt: skip
        return page

    def _take_consent(self, form_token: str, browser: str) -> dict[str, Any] | None:
        """The request a form token was shown for, once, to the browser it was shown to."""
        with self._lock:
            consent = self.consents.pop(form_token, None)
        if consent is None or consent["expires"] < time.time():
            return None
        return consent if secrets.compare_digest(s256(browser), consent["browser"]) else None

    def _forget_expired_consents(self) -> None:
        """(Under the lock.) Forms never answered do not pile up."""
        now = time.time()
        for token in [t for t, c in self.consents.items() if c["expires"] < now]:
            del self.consents[token]

    # The user's answer, for the request the form was shown for: back to the redirect URI with
    # a code, or with access_denied.
    async def decide(self, request: Request) -> Response:
        form = await _form(request)
        consent = self._take_consent(
            form.get("csrf_token", ""), request.cookies.get(CONSENT_COOKIE, "")
        )
        if consent is None:
            return HTMLResponse("<p>this form expired or was not shown here; start again</p>",
                                status_code=400)  # fmt: skip
        query = consent["query"]
        back = {"state": query.get("state", "")}
        if form.get("decision") != "allow":
            back["error"] = "access_denied"
        else:
            code = secrets.token_urlsafe(24)
            with self._lock:
                self.codes[code] = {
                    "redirect_uri": query["redirect_uri"], "scope": query.get("scope", ""),
                    "challenge": query["code_challenge"], "expires": time.time() + 300,
                }  # fmt: skip
            back["code"] = code
        return RedirectResponse(f"{query['redirect_uri']}?{urlencode(back)}", status_code=303)

    # The token endpoint: an authorization code or a refresh token for a fresh pair.
    async def token(self, request: Request) -> Response:
        form = await _form(request)
        if self.token_delay_s:
            await asyncio.sleep(self.token_delay_s)
        if (form.get("client_id"), form.get("client_secret")) != (CLIENT_ID, CLIENT_SECRET):
            return _oauth_error(401, "invalid_client", "unknown client or wrong secret")
        grant = form.get("grant_type", "")
        with self._lock:
            self.token_requests.append(grant)
            if grant == "authorization_code":
                return self._exchange_code(form)
            if grant == "refresh_token":
                return self._rotate_refresh_token(form)
        return _oauth_error(400, "unsupported_grant_type", grant or "missing grant_type")

    def _exchange_code(self, form: dict[str, str]) -> JSONResponse:
        """(Under the lock.) A code is good once, for its redirect URI and PKCE verifier."""
        entry = self.codes.pop(form.get("code", ""), None)
        if entry is None or entry["expires"] < time.time():
            return _oauth_error(400, "invalid_grant", "unknown or expired code")
        if entry["redirect_uri"] != form.get("redirect_uri"):
            return _oauth_error(400, "invalid_grant", "redirect_uri differs")
        if s256(form.get("code_verifier", "")) != entry["challenge"]:
            return _oauth_error(400, "invalid_grant", "PKCE verification failed")
        return JSONResponse(self._issue(entry["scope"]))

    def _rotate_refresh_token(self, form: dict[str, str]) -> JSONResponse:
        """(Under the lock.) A refresh token is good once: rotation, as some providers do."""
        presented = form.get("refresh_token", "")
        if not self.refresh.get(presented):
            return _oauth_error(400, "invalid_grant", "refresh token spent or revoked")
        self.refresh[presented] = False
        return JSONResponse(self._issue(form.get("scope", "store.read")))

    # RFC 7009: the token (access or refresh) stops working; always 200.
    async def revoke(self, request: Request) -> Response:
        presented = (await _form(request)).get("token", "")
        with self._lock:
            if presented in self.refresh:
                self.refresh[presented] = False
            self.access.pop(presented, None)
        return Response(status_code=200)


async def _form(request: Request) -> dict[str, str]:
    """A form-encoded body, the first value of each field."""
    return {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}


def _authorize_problem(query: dict[str, str], registered: set[str]) -> str | None:
    if query.get("response_type") != "code":
        return "response_type must be code"
    if query.get("client_id") != CLIENT_ID:
        return "unknown client_id"
    # Compared whole, as OAuth 2.1 asks: no prefix, no other path, no extra query.
    if query.get("redirect_uri") not in registered:
        return "redirect_uri is not registered for this client"
    if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
        return "PKCE with S256 is required"
    if not set(query.get("scope", "").split()) <= SCOPES:
        return f"scopes must be among {', '.join(sorted(SCOPES))}"
    return None


def _oauth_error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


CONSENT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox store — allow access</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 28rem; margin: 10vh auto">
<h1>Allow Switchyard to use your sandbox store?</h1>
<p>It asks for: <strong>{scope}</strong></p>
<form method="post" action="/oauth/authorize">
<input type="hidden" name="csrf_token" value="{token}">
<button name="decision" value="allow">Allow</button>
<button name="decision" value="deny">Deny</button>
</form></body></html>"""
