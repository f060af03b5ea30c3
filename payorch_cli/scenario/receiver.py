"""The webhook endpoint a scenario run hosts: every delivery verified, recorded, waitable.

One receiver serves several subscriptions (one per credential a scenario listens as), each on its
own path `/hooks/<slot>` so it knows which signing secret to check. It is a standard-library
threaded server rather than an aiohttp one: it must work beside a synchronous runner and in
`--base-url` runs that never import aiohttp (0.4 s), and it needs no event loop of its own.
A delivery that fails verification is answered 400 (as a correct endpoint would) and kept, so a
failing expectation can say why.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from payorch.webhooks import SignatureVerificationError, verify


@dataclass
class Delivery:
    slot: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    envelope: dict[str, Any] | None
    verified: bool | None  # None: nothing to verify (a managed inbox record)
    problem: str | None
    answered: int
    at: float = field(default_factory=time.monotonic)

    @property
    def event_type(self) -> str:
        return str((self.envelope or {}).get("type") or self.headers.get("x-service-event", "?"))

    @property
    def event_id(self) -> str:
        return str((self.envelope or {}).get("id") or self.headers.get("x-service-delivery", "?"))


class Receiver:
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.status = 200  # what a verified delivery is answered
        self._secrets: dict[str, str] = {}
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                slot = self.path.rstrip("/").rsplit("/", 1)[-1]
                try:
                    status = receiver._receive(slot, dict(self.headers.items()), body)
                except Exception as exc:  # a bug here must show in the report, not on stderr
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    problem = f"receiver error: {exc!r}"
                    receiver.add(Delivery(slot, headers, body, None, False, problem, 500))
                    status = 500
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the scenario report is the log

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.01,), daemon=True
        )
        self._thread.start()

    def url(self, slot: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/{slot}"

    def arm(self, slot: str, secret: str) -> None:
        with self._changed:
            self._secrets[slot] = secret
            self._changed.notify_all()

    def secret(self, slot: str) -> str | None:
        return self._secrets.get(slot)

    def _receive(self, slot: str, raw_headers: dict[str, str], body: bytes) -> int:
        headers = {k.lower(): v for k, v in raw_headers.items()}
        with self._changed:
            # The first delivery can beat the answer that carries the secret: wait for it.
            self._changed.wait_for(lambda: slot in self._secrets, timeout=5)
            secret = self._secrets.get(slot, "")
        envelope, problem = None, None
        try:
            envelope = verify(body, headers.get("x-service-signature"), secret)
        except SignatureVerificationError as exc:
            problem = f"{exc.reason}: {exc}"
            try:
                envelope = json.loads(body)
            except ValueError:
                envelope = None
        answered = self.status if problem is None else 400
        self.add(Delivery(slot, headers, body, envelope, problem is None, problem, answered))
        return answered

    def add(self, delivery: Delivery) -> None:
        with self._changed:
            self.deliveries.append(delivery)
            self._changed.notify_all()

    def wait(self, found: Callable[[], Any], timeout: float) -> Any:
        """Wait until `found()` returns something truthy (called under the lock after each
        delivery), or `timeout` seconds; returns its last value."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                result = found()
                remaining = deadline - time.monotonic()
                if result or remaining <= 0:
                    return result
                self._changed.wait(remaining)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
