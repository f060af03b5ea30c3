"""The webhook endpoint a scenario run hosts: every delivery verified, recorded, waitable.

One receiver serves several subscriptions (one per credential a scenario listens as), each on its
own path `/hooks/<slot>` so it knows which signing secret to check. It is a standard-library
threaded server rather than an aiohttp one: it must work beside a synchronous runner and in
`--base-url` runs that never import aiohttp (0.4 s), and it needs no event loop of its own.
A delivery that fails verification is answered 400 (as a correct endpoint would) and kept, so a
failing expectation can say why. Connections are kept alive (HTTP/1.1), as with any real
endpoint: a new connection and thread for every delivery made an awaited webhook five times
slower (1.3 ms against 0.27 ms) and a 1,000-step scenario a quarter slower
(bench/scenario_steps.py). `close()` ends the open connections too.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from payorch import bounded
from payorch.webhooks import SignatureVerificationError, verify


class WebhookHTTPServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A sender that went away mid-answer (a server stopping, our own close()) is normal
        # for a webhook endpoint, not a traceback on stderr; anything else still is one.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


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

    @cached_property  # envelope and headers never change once received
    def event_type(self) -> str:
        return str((self.envelope or {}).get("type") or self.headers.get("x-service-event", "?"))

    @cached_property
    def event_id(self) -> str:
        return str((self.envelope or {}).get("id") or self.headers.get("x-service-delivery", "?"))


class Receiver:
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self.by_type: dict[tuple[str, str], list[Delivery]] = {}  # (slot, event type): in order
        self.status = 200  # what a verified delivery is answered
        self._secrets: dict[str, str] = {}
        self._changed = threading.Condition()
        self._connections: set[socket.socket] = set()  # open keep-alive connections
        self._connections_lock = threading.Lock()
        self._closed = False
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection for many deliveries

            def setup(self) -> None:
                super().setup()
                with receiver._connections_lock:
                    receiver._connections.add(self.connection)
                    if receiver._closed:  # accepted as close() ran: no request is read
                        receiver._end(self.connection)

            def finish(self) -> None:
                with receiver._connections_lock:
                    receiver._connections.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:
                if self.headers.get("Transfer-Encoding"):
                    self.close_connection = True  # a body not read below must not be parsed next
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

        self._server = WebhookHTTPServer(("127.0.0.1", 0), Handler)
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
                envelope = bounded.json_loads(body)
            except ValueError:
                envelope = None
        answered = self.status if problem is None else 400
        self.add(Delivery(slot, headers, body, envelope, problem is None, problem, answered))
        return answered

    def add(self, delivery: Delivery) -> None:
        with self._changed:
            self.deliveries.append(delivery)
            self.by_type.setdefault((delivery.slot, delivery.event_type), []).append(delivery)
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
        with self._connections_lock:  # kept-alive connections: their threads end, peers see EOF
            self._closed = True
            connections = list(self._connections)
        for connection in connections:
            self._end(connection)

    @staticmethod
    def _end(connection: socket.socket) -> None:
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)
