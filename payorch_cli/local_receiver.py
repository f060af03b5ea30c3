"""`payorch listen`'s own endpoint: a loopback server that verifies every delivery's signature.

Imported when `listen` runs, not with the CLI: its HTTP server costs `payorch --help` 20 ms.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from payorch_cli.scenario.receiver import WebhookHTTPServer


class LocalReceiver:
    """A loopback endpoint that checks signatures and answers 200 (or 400 with the reason)."""

    def __init__(self) -> None:
        self.secret: str | None = None
        self.verdicts: dict[str, str] = {}  # delivery id -> "ok" or the failure reason
        self._ready = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer = receiver.check(body, self.headers)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the delivery lines are the log

        self._server = WebhookHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/webhooks"

    def start(self) -> None:
        self._thread.start()

    def arm(self, secret: str) -> None:
        self.secret = secret
        self._ready.set()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def check(self, body: bytes, headers: Any) -> tuple[int, bytes]:
        from payorch.webhooks import SignatureVerificationError, verify

        # A delivery can beat the create call's answer to us: wait for the secret briefly.
        self._ready.wait(5)
        delivery = headers.get("X-Service-Delivery") or "?"
        try:
            verify(body, headers.get("X-Service-Signature"), self.secret or "")
        except SignatureVerificationError as exc:
            self.verdicts[delivery] = exc.reason
            return 400, f'{{"error":"{exc.reason}"}}'.encode()
        self.verdicts[delivery] = "ok"
        return 200, b'{"received":true}'
