// The connect page: shows what a link token may connect, asks for the credentials, connects.
// Opened by connect.js in a popup (it then reports back with postMessage to the opener's
// origin, passed as ?origin=) or on its own from a shared link (it then shows a done state).
// Back from an OAuth sign-in, its URL holds only a one-time result id: what it reports is what
// the server answers for that id, never what a URL says (anyone can write a URL).
"use strict";

(function () {
  const params = new URLSearchParams(window.location.search);
  const linkToken = params.get("link_token") || "";
  const openerOrigin = params.get("origin");
  const $ = (id) => document.getElementById(id);

  function show(id, visible) { $(id).hidden = !visible; }

  function status(text, kind) {
    const box = $("status");
    box.textContent = text || "";
    box.className = "status" + (kind ? " " + kind : "");
  }

  function report(message, origin = openerOrigin) {
    // Only to the origin the opener named, and only when there is an opener.
    if (window.opener && origin) {
      window.opener.postMessage(message, origin);
    }
  }

  // What each error means for the person in front of the page.
  function explain(error, label) {
    const code = error && error.error;
    if (code === "LINK_TOKEN_INVALID") {
      return "This link cannot be used: " + error.message.replace(/^this link /, "it ") + ".";
    }
    if (code === "INVALID_CREDENTIALS") {
      return label + " did not accept these details. Check them and try again.";
    }
    if (code === "PROVIDER_UNAVAILABLE" || code === "SERVICE_UNAVAILABLE") {
      return label + " could not be reached just now. Please try again in a minute.";
    }
    if (code === "INTEGRATION_DISABLED") {
      return label + " is not available for connection right now.";
    }
    if (error && error.message) {
      return error.message.charAt(0).toUpperCase() + error.message.slice(1) + ".";
    }
    return "Something went wrong. Please try again.";
  }

  function api(method, body) {
    const url = "/connect-account/session" +
      (method === "GET" ? "?link_token=" + encodeURIComponent(linkToken) : "");
    return call(url, method, body);
  }

  async function call(url, method, body) {
    let response;
    try {
      response = await fetch(url, {
        method,
        headers: body ? { "Content-Type": "application/json" } : {},
        body: body ? JSON.stringify(body) : undefined,
        credentials: "omit",
      });
    } catch (_) {
      throw { error: "NETWORK", message: "the connection to the server was lost; try again" };
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) { throw data; }
    return data;
  }

  function field(spec) {
    const wrap = document.createElement("div");
    const id = "field-" + spec.name;
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = spec.label + (spec.required ? "" : " (optional)");
    const input = document.createElement("input");
    input.id = id;
    input.name = spec.name;
    input.type = spec.secret ? "password" : "text";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.required = spec.required;
    if (spec.pattern) {
      // Checked here, not with the pattern attribute: browsers compile that one with the
      // v flag, under which the service's patterns (e.g. "[a-z0-9-]") do not parse.
      input.dataset.pattern = spec.pattern;
    }
    wrap.append(label, input);
    if (spec.description) {
      const hint = document.createElement("span");
      hint.className = "hint muted";
      hint.id = id + "-hint";
      hint.textContent = spec.description;
      input.setAttribute("aria-describedby", hint.id);
      wrap.append(hint);
    }
    return wrap;
  }

  function choose(integration) {
    show("choose", false);
    status("");
    $("form-title").textContent = integration.label;
    const fields = $("fields");
    fields.replaceChildren();
    const oauth = integration.auth.scheme === "oauth2";
    if (!oauth) {
      integration.auth.fields.forEach((spec) => fields.append(field(spec)));
    }
    $("oauth-note").textContent = oauth
      ? "You will sign in at " + integration.label + " and come back here." : "";
    show("oauth-note", oauth);
    $("submit").textContent = (oauth ? "Continue with " : "Connect ") + integration.label;
    show("form", true);
    $("form").onsubmit = oauth
      ? (event) => { event.preventDefault(); startOAuth(integration); }
      : (event) => submit(event, integration);
    const first = fields.querySelector("input");
    if (first) { first.focus(); }
  }

  function startOAuth(integration) {
    $("submit").disabled = true;
    status("Taking you to " + integration.label + "…", "info");
    const query = new URLSearchParams({ link_token: linkToken, integration_name: integration.name });
    if (openerOrigin) { query.set("origin", openerOrigin); }
    window.location.assign("/connect-account/oauth/start?" + query.toString());
  }

  // Back from the provider's sign-in: the server says how it went, once, for this result id.
  async function oauthResult(resultId) {
    $("intro").textContent = "";
    let result;
    try {
      result = await call("/connect-account/oauth/result", "POST", { result_id: resultId });
    } catch (error) {
      status(explain(error, "The system"), "error");
      return;
    }
    // The opener's origin the server kept when the sign-in started (none: nobody to tell).
    const origin = result.origin;
    if (result.outcome === "connected") {
      const integration = result.integration;
      $("done-text").textContent = "Your " + integration.label +
        " account is connected. You can close this window.";
      show("done", true);
      $("done-title").focus();
      report({ type: "switchyard:connected",
               integrated_account_id: result.integrated_account_id, integration }, origin);
      return;
    }
    const message = result.message || "the account could not be connected";
    status(message.charAt(0).toUpperCase() + message.slice(1) + ".", "error");
    report({ type: "switchyard:failed", message }, origin);
  }

  async function submit(event, integration) {
    event.preventDefault();
    const form = $("form");
    const inputs = Array.from(form.querySelectorAll("input"));
    let firstBad = null;
    inputs.forEach((input) => {
      const value = input.value.trim();
      const pattern = input.dataset.pattern;
      const bad = !input.checkValidity() || Boolean(value && pattern && !new RegExp(pattern).test(value));
      input.setAttribute("aria-invalid", String(bad));
      if (bad && !firstBad) { firstBad = input; }
    });
    if (firstBad) {
      const label = form.querySelector('label[for="' + firstBad.id + '"]').textContent;
      status(label + " is missing or not in the expected form.", "error");
      firstBad.focus();
      return;
    }
    const credentials = {};
    inputs.forEach((input) => { if (input.value.trim()) { credentials[input.name] = input.value.trim(); } });
    $("submit").disabled = true;
    status("Checking your details with " + integration.label + "…", "info");
    try {
      const result = await api("POST", {
        link_token: linkToken, integration_name: integration.name, credentials,
      });
      show("form", false);
      status("");
      $("done-text").textContent = "Your " + integration.label +
        " account is connected. You can close this window.";
      show("done", true);
      $("done-title").focus();
      report({ type: "switchyard:connected", integrated_account_id: result.integrated_account_id,
               integration: result.integration });
    } catch (error) {
      status(explain(error, integration.label), "error");
      if (error && error.error === "LINK_TOKEN_INVALID") {
        show("form", false);
        report({ type: "switchyard:failed", message: explain(error, integration.label) });
      }
    } finally {
      $("submit").disabled = false;
    }
  }

  async function start() {
    $("done-title").tabIndex = -1;
    if (params.get("oauth_result")) {
      oauthResult(params.get("oauth_result"));
      return;
    }
    if (!linkToken) {
      $("intro").textContent = "";
      status("This link is incomplete. Ask for a new one.", "error");
      return;
    }
    let session;
    try {
      session = await api("GET");
    } catch (error) {
      $("intro").textContent = "";
      status(explain(error, "The system"), "error");
      report({ type: "switchyard:failed", message: explain(error, "The system") });
      return;
    }
    const offered = session.integrations;
    const reauth = session.mode === "reauthorize";
    $("title").textContent = reauth ? "Reconnect your account" : "Connect your account";
    $("intro").textContent = reauth
      ? "The connection stopped working. Enter your details again to restore it."
      : "Enter the details below to connect. They are stored encrypted and used only to reach the system you pick.";
    if (offered.length === 0) {
      status("Nothing can be connected with this link right now.", "error");
      return;
    }
    if (offered.length === 1) {
      choose(offered[0]);
      return;
    }
    const list = $("choices");
    list.replaceChildren();
    offered.forEach((integration) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = integration.label;
      button.onclick = () => choose(integration);
      list.append(button);
    });
    show("choose", true);
    list.querySelector("button").focus();
  }

  start();
})();
