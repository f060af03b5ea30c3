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
(what `create_app` returns) makes the server that builds it. The hooks, and the protocol's state
the deadline reads, are aiohttp internals, kept in simulator/http/aiohttp_private.py with every
other; tests/api/test_connections.py holds them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from typing import Any

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.http import aiohttp_private
from simulator.http.aiohttp_private import HeadDeadlineProtocol
from simulator.http.responses import (
    new_request_id,
    refusal_bytes,
    refusal_response,
)

log = logging.getLogger(__name__)

HEADER_TIMEOUT = 10.0  # seconds to send a whole request head (nginx: 60, Node: 60, ours: 10)
KEEPALIVE_TIMEOUT = 75.0  # an idle kept-alive connection (nginx's default; above clients' own)
# After answering a request whose body is refused, the rest of what the client sends is read and
# dropped for this long before the connection closes (so the answer is not lost to a reset).
REFUSED_LINGER_SECONDS = 1.0
OVER_LIMIT_RETRY_SECONDS = 1
OVER_LIMIT_LOG_INTERVAL_SECONDS = 10.0


class OverLimitLog:
    """One server's log of connections refused over the limit: one line per interval, with how
    many were refused since the last one (3,000 silent connections wrote 150,000 lines)."""

    def __init__(self) -> None:
        self.logged: float | None = None
        self.missed = 0

    def refused(self, limit: int) -> None:
        now = time.monotonic()
        if self.logged is not None and now - self.logged < OVER_LIMIT_LOG_INTERVAL_SECONDS:
            self.missed += 1
            return
        log.warning(
            "refused a connection over the limit of %d open connections (and %d more since the "
            "last line); the open-files limit (ulimit -n) sets it",
            limit,
            self.missed,
        )
        self.logged, self.missed = now, 0


class ConnectionHandler(HeadDeadlineProtocol):
    """One connection: aiohttp's protocol, with a deadline on each request head, refused with
    503 when the server already holds all the connections its open files allow."""

    def __init__(
        self,
        manager: web.Server,
        *,
        header_timeout: float = HEADER_TIMEOUT,
        max_connections: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(manager, header_timeout=header_timeout, **kwargs)
        self.max_connections = max_connections
        self.server = manager

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        limit = self.max_connections
        if limit and aiohttp_private.open_connections(self.server) > limit:
            self._refuse_over_limit(transport, limit)

    def _refuse_over_limit(self, transport: asyncio.BaseTransport, limit: int) -> None:
        """One connection more than the open files allow (simulator/http/openfiles.py): 503
        with `Retry-After`, written before its request is read, and closed; one log line per
        interval, however many there are."""
        self.disarm_head_deadline()
        error = ApiError(
            "service_unavailable",
            f"The server has {limit} connections open, all it has room for; retry shortly.",
            headers={"Retry-After": str(OVER_LIMIT_RETRY_SECONDS)},
        )
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(refusal_bytes(error, new_request_id()))
        transport.close()
        over_limit = getattr(self.server, "over_limit_log", None)
        if over_limit is None:
            over_limit = self.server.over_limit_log = OverLimitLog()  # type: ignore[attr-defined]  # one per server, made on first use
        over_limit.refused(limit)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's answer to a request it could not parse (or handle): the error envelope.

        A request aiohttp could not parse is one line in the server's output; a fault of the
        server's own keeps aiohttp's traceback. Refused, as aiohttp does, once a response has
        started (the connection is broken then)."""
        request_id = new_request_id()
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
        response = refusal_response(error, request_id)
        response.force_close()  # what follows on the connection cannot be trusted either
        return response

    def drop_after_response(self, seconds: float = REFUSED_LINGER_SECONDS) -> None:
        """Close the connection soon after the current response is written. aiohttp reads and
        drops an unread body for up to 10 s after the answer (its "lingering" close: a socket
        closed with unread bytes sends a reset, which can cost the client the answer), which
        would give a client trickling a body that long again; here it gets 1 s."""
        super().drop_after_response(seconds)


def log_refused(remote: str | None, status: int, reason: str, request_id: str) -> None:
    """One line in the server's output for a request refused at the connection level (it could
    not be parsed, or its body could not be read in time): the client's doing, worth a line to
    whoever runs the server, never a traceback."""
    log.warning("refused a request from %s: %d %s (%s)", remote or "?", status, reason, request_id)


def _printable(text: str, limit: int = 200) -> str:
    """aiohttp's reason, on one line of printable ASCII (it quotes the offending bytes)."""
    line = " ".join(text.split())
    return "".join(c if " " <= c <= "~" else "?" for c in line)[:limit]


# aiohttp warns on subclasses of its Application (aiohttp_private.Application says why it is one).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)

    class Application(aiohttp_private.Application):
        """`web.Application` whose connections are `ConnectionHandler`s."""

        protocol = ConnectionHandler
