"""A webhook receiver to run locally: verifies Switchyard's signatures, drops duplicates.

    .venv/bin/python docs/examples/webhook_receiver.py --port 9000 --secret whsec_…

It prints one line per event it accepts (`<event type> <event id>`, then the JSON body) and
answers 400 to a request whose signature does not verify. Only the standard library and
`standardwebhooks` (installed with Switchyard): copy it as the start of your own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError


def make_handler(verifier: Webhook, seen: set[str]) -> type[BaseHTTPRequestHandler]:
    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            try:
                # The raw body, as sent: re-encoded JSON would not match the signature.
                event = verifier.verify(body, dict(self.headers))
            except WebhookVerificationError as exc:
                self._answer(400, {"error": f"bad signature: {exc}"})
                return
            event_id = self.headers["webhook-id"]
            if event_id in seen:  # a retry or a replay: already handled, answer 2xx
                self._answer(200, {"duplicate": True})
                return
            seen.add(event_id)  # in production: a table with a unique key
            print(f"{event['event']} {event_id}\n{json.dumps(event)}", flush=True)
            self._answer(200, {"ok": True})  # answer fast; queue slow work

        def _answer(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # one line per event is printed above; no access log

    return Receiver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secret", required=True, help="the webhook's whsec_… secret")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), make_handler(Webhook(args.secret), set()))
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends it quietly
        server.serve_forever()


if __name__ == "__main__":
    main()
