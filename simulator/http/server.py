"""The connection layer under the app: aiohttp's HTTP protocol with the API's own limits.

aiohttp reads a request head for as long as a client takes to send it (a client sending one
byte at a time held its connection for good). `ConnectionHandler`, aiohttp's per-connection
protocol with that edge bounded, gives every request head `header_timeout` seconds from the
connection's start, or from its first byte on a kept-alive connection, after which the
connection is closed; an idle kept-alive connection is closed after `keepalive_timeout`.

aiohttp builds that protocol itself, with no setting to pick another class, so `Application`
(what `create_app` returns) makes the server that builds it. Both hooks are aiohttp internals
(`Application._make_handler`, `Server.__call__`); tests/api/test_connections.py holds them.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

HEADER_TIMEOUT = 10.0  # seconds to send a whole request head (nginx: 60, Node: 60, ours: 10)
KEEPALIVE_TIMEOUT = 75.0  # an idle kept-alive connection (nginx's default; above clients' own)


class ConnectionHandler(RequestHandler):
    """One connection: aiohttp's protocol, with a deadline on each request head."""

    def __init__(
        self, manager: web.Server, *, header_timeout: float = HEADER_TIMEOUT, **kwargs: Any
    ) -> None:
        super().__init__(manager, **kwargs)
        self.header_timeout = header_timeout
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm_head_timer()  # the first request's head, byte one included

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        super().data_received(data)
        if self._request_count != heads:
            self._disarm_head_timer()  # a whole head arrived: its handler takes over
        elif data and self._head_timer is None and self._awaiting_head():
            self._arm_head_timer()  # the start of the next head on a kept-alive connection

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


class Server(web.Server):
    """aiohttp's server, making `ConnectionHandler`s."""

    def __call__(self) -> RequestHandler:
        return ConnectionHandler(self, loop=self._loop, **self._kwargs)


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
