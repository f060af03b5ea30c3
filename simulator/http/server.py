"""The connection layer under the app: aiohttp's HTTP protocol with the API's own limits.

aiohttp reads a request head for as long as a client takes to send it (a client sending one
byte at a time held its connection for good), and answers a request it cannot parse (a malformed
header, an over-long line, a bad method) with its own plain-text 400 before any middleware runs.
`ConnectionHandler` is aiohttp's per-connection protocol with those two edges changed: every
request head has `header_timeout` seconds from the connection's start, or from its first byte on
a kept-alive connection, after which the connection is closed (an idle kept-alive connection is
closed after `keepalive_timeout`); and what aiohttp cannot parse is answered in the API's error
envelope, `invalid_request` with a request id, like every other error, and logged as one line
(the client's mistake, not the server's: no traceback; a fault of the server's own, a 500, still
logs its traceback).

A request body has its own deadline, enforced where it is read (`receive_body` in
simulator/http/requests.py); when it passes, the request is answered and `drop_after_response`
closes the connection within a second instead of letting aiohttp read the rest of the body for
ten.

aiohttp builds that protocol itself, with no setting to pick another class, so `Application`
(what `create_app` returns) makes the server that builds it. Both hooks are aiohttp internals
(`Application._make_handler`, `Server.__call__`); tests/api/test_connections.py holds them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from simulator.domain.errors import ApiError
from simulator.domain.ids import token_hex
from simulator.http.responses import REQUEST_ID_HEADER, error_response
from simulator.jsonio import dumps

log = logging.getLogger(__name__)

HEADER_TIMEOUT = 10.0  # seconds to send a whole request head (nginx: 60, Node: 60, ours: 10)
KEEPALIVE_TIMEOUT = 75.0  # an idle kept-alive connection (nginx's default; above clients' own)
# After answering a request whose body is refused, the rest of what the client sends is read and
# dropped for this long before the connection closes (so the answer is not lost to a reset).
REFUSED_LINGER_SECONDS = 1.0
OVER_LIMIT_RETRY_SECONDS = 1
OVER_LIMIT_LOG_INTERVAL_SECONDS = 10.0


class ConnectionHandler(RequestHandler):
    """One connection: aiohttp's protocol, with a deadline on each request head."""

    def __init__(
        self,
        manager: web.Server,
        *,
        header_timeout: float = HEADER_TIMEOUT,
        max_connections: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(manager, **kwargs)
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        limit, manager = self.max_connections, self._manager
        # aiohttp's own table of the server's connections (this one included).
        if limit and manager is not None and len(manager._connections) > limit:
            self._refuse_over_limit(transport, limit)
            return
        self._arm_head_timer()  # the first request's head, byte one included

    def _refuse_over_limit(self, transport: asyncio.BaseTransport, limit: int) -> None:
        """One connection more than the open files allow (simulator/http/openfiles.py): 503
        with `Retry-After`, written before its request is read, and closed; one log line per
        interval, however many there are."""
        request_id = "req_" + token_hex(12)
        error = ApiError(
            "service_unavailable",
            f"The server has {limit} connections open, all it has room for; retry shortly.",
        )
        body = dumps(error.body(request_id))
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Retry-After: {OVER_LIMIT_RETRY_SECONDS}\r\n{REQUEST_ID_HEADER}: {request_id}\r\n"
            f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(head.encode() + body)
        transport.close()
        manager = self._manager
        if isinstance(manager, Server):
            manager.over_limit(limit)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        RequestHandler.data_received(self, data)
        if self._request_count != heads:
            if self._head_timer is not None:
                self._disarm_head_timer()  # a whole head arrived: its handler takes over
        elif data and self._head_timer is None and self._awaiting_head():
            self._arm_head_timer()  # the start of the next head on a kept-alive connection

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's answer to a request it could not parse (or handle): the error envelope.

        A request aiohttp could not parse is one line in the server's output; a fault of the
        server's own keeps aiohttp's traceback. Refused, as aiohttp does, once a response has
        started (the connection is broken then)."""
        request_id = "req_" + token_hex(12)
        if status >= 500:
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
            error = ApiError("internal_error")
        else:
            reason = _printable(message or (str(exc) if exc else "") or "unreadable request")
            log_refused(request.remote, status, reason, request_id)
            error = ApiError(
                "invalid_request",
                "The HTTP request could not be read: malformed request line or headers.",
                details={"reason": reason},
            )
        if request.writer.output_size > 0:
            raise ConnectionError("a response has started: no room for the error's")
        response = error_response(error, request_id)
        response.force_close()  # what follows on the connection cannot be trusted either
        return response

    def drop_after_response(self) -> None:
        """Close the connection soon after the current response is written. aiohttp reads and
        drops an unread body for up to 10 s after the answer (its "lingering" close: a socket
        closed with unread bytes sends a reset, which can cost the client the answer), which
        would give a client trickling a body that long again; here it gets 1 s."""
        self._lingering_time = min(self._lingering_time, REFUSED_LINGER_SECONDS)

    def _awaiting_head(self) -> bool:
        """No request is being handled: the connection waits for the next request's head.
        (Body bytes arrive while a handler runs, so they never start the deadline.)"""
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def _arm_head_timer(self) -> None:
        if self.header_timeout > 0:
            self._head_timer = self._loop.call_later(self.header_timeout, self._head_overdue)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_overdue(self) -> None:
        self._head_timer = None
        if self._awaiting_head():  # still no whole head: a client this slow gets no more time
            self.force_close()


def log_refused(remote: str | None, status: int, reason: str, request_id: str) -> None:
    """One line in the server's output for a request refused at the connection level (it could
    not be parsed, or its body could not be read in time): the client's doing, worth a line to
    whoever runs the server, never a traceback."""
    log.warning("refused a request from %s: %d %s (%s)", remote or "?", status, reason, request_id)


def _printable(text: str, limit: int = 200) -> str:
    """aiohttp's reason, on one line of printable ASCII (it quotes the offending bytes)."""
    line = " ".join(text.split())
    return "".join(c if " " <= c <= "~" else "?" for c in line)[:limit]


class Server(web.Server):
    """aiohttp's server, making `ConnectionHandler`s."""

    # Connections refused over the limit: when last logged, and how many since (set on first use:
    # aiohttp builds the server, whose class is swapped afterwards, so no __init__ of ours runs).
    _over_limit_logged: float | None = None
    _over_limit_missed = 0

    def __call__(self) -> RequestHandler:
        return ConnectionHandler(self, loop=self._loop, **self._kwargs)

    def over_limit(self, limit: int) -> None:
        now = time.monotonic()
        last = self._over_limit_logged
        if last is not None and now - last < OVER_LIMIT_LOG_INTERVAL_SECONDS:
            self._over_limit_missed += 1
            return
        log.warning(
            "refused a connection over the limit of %d open connections (and %d more since the "
            "last line); the open-files limit (ulimit -n) sets it",
            limit,
            self._over_limit_missed,
        )
        self._over_limit_logged, self._over_limit_missed = now, 0


# aiohttp discourages subclassing its Application (it warns at class creation); this one only
# swaps the server class, which aiohttp offers no other way to do.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)

    class Application(web.Application):
        """`web.Application` whose connections are `ConnectionHandler`s."""

        def _make_handler(self, **kwargs: Any) -> web.Server:
            server = super()._make_handler(**kwargs)
            server.__class__ = Server
            return server
