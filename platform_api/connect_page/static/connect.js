// Switchyard's link library: <script src="https://<switchyard>/connect.js"></script>, then
//   const { integrated_account_id, integration } = await Switchyard.connect({ linkToken });
// Opens the hosted connect page in a popup; resolves when the account is connected, rejects
// when the user closes the window first or the link cannot be used. Messages are accepted
// only from the Switchyard origin that served this file, and only from the popup it opened.
"use strict";

(function () {
  const script = document.currentScript;
  const switchyardOrigin = new URL(script ? script.src : window.location.href).origin;

  function connect(options) {
    const linkToken = options && options.linkToken;
    return new Promise((resolve, reject) => {
      if (!linkToken) {
        reject(new Error("Switchyard.connect needs { linkToken }"));
        return;
      }
      const url = switchyardOrigin + "/connect-account?link_token=" +
        encodeURIComponent(linkToken) + "&origin=" + encodeURIComponent(window.location.origin);
      const width = (options && options.width) || 480;
      const height = (options && options.height) || 720;
      const popup = window.open(url, "switchyard-connect",
        "popup,width=" + width + ",height=" + height);
      if (!popup) {
        reject(new Error("the browser blocked the connect window; allow popups and retry"));
        return;
      }
      let settled = false;
      const finish = (fn, value) => {
        if (settled) { return; }
        settled = true;
        window.clearInterval(watch);
        window.removeEventListener("message", onMessage);
        fn(value);
      };
      function onMessage(event) {
        if (event.origin !== switchyardOrigin || event.source !== popup) { return; }
        const data = event.data || {};
        if (data.type === "switchyard:connected") {
          finish(resolve, {
            integrated_account_id: data.integrated_account_id, integration: data.integration,
          });
          popup.close();
        } else if (data.type === "switchyard:failed") {
          finish(reject, new Error(data.message || "the account could not be connected"));
        }
      }
      const watch = window.setInterval(() => {
        if (popup.closed) {
          finish(reject, new Error("the connect window was closed before connecting"));
        }
      }, 250);
      window.addEventListener("message", onMessage);
    });
  }

  window.Switchyard = Object.assign(window.Switchyard || {}, { connect });
})();
