"""aiohttp's private names, all of them, and nowhere else (issue 32).

The HTTP layer reaches under aiohttp's public API in a few places, for a limit aiohttp does not
offer (a deadline on each request head, its own error envelope for what aiohttp cannot parse)
or for speed on every request (a response sent in one write, a body taken where the stream
holds it, a request's dict read without a method call). Each such name is used here and only
here, with the reason no public API serves it (a comment `# _name: why`), so that a new aiohttp
is checked against one module. tests/unit/test_aiohttp_fence.py fails when a private aiohttp
name is used in any other module; pyproject.toml admits only the aiohttp releases the tests run
on (`make check`: the newest and the lowest of the range).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from aiohttp import hdrs, web

# MAX_SYNC_CHUNK_SIZE: aiohttp's threshold for compressing in its executor; `Answer` sets the
# attribute `web.Response.__init__` would set, the value from where aiohttp keeps it.
from aiohttp.compression_utils import MAX_SYNC_CHUNK_SIZE

# rfc822_formatted_time: the Date header as aiohttp writes it (cached per second); a public
# formatter (email.utils.formatdate) costs a strftime per response and could differ in form.
from aiohttp.helpers import rfc822_formatted_time

# SERVER_SOFTWARE: the Server header's value aiohttp sends, for `Answer` to send the same.
from aiohttp.http import SERVER_SOFTWARE, HttpVersion11

# HttpProcessingError: what reading a body with bad chunked framing raises; aiohttp exports
# no public name for it (aiohttp.web's exceptions are the ones it answers with).
from aiohttp.http_exceptions import HttpProcessingError

# _serialize_headers: the status line and headers as aiohttp's writer serialises them (in C
# when its extensions are built), so `Answer`'s head is byte for byte aiohttp's own.
from aiohttp.http_writer import _serialize_headers
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

__all__ = [
    "AIOHTTP_HANDLE",
    "Answer",
    "Application",
    "HeadDeadlineProtocol",
    "HttpProcessingError",
    "app_state",
    "buffered_body",
    "has_subapps",
    "open_connections",
    "request_state",
    "set_match_info",
]

# _state: the dict behind a request's (and an application's) mapping interface. `request[KEY]`
# and `request.get(KEY)` are a Python-level method call each (MutableMapping), several per
# request on the hot path; the dict's own `get` is one C call. attrgetter: no Python frame.
request_state: Callable[[web.BaseRequest], dict[Any, Any]] = attrgetter("_state")
app_state: Callable[[web.Application], dict[Any, Any]] = attrgetter("_state")

# _handle: aiohttp's handling of one request by an application (route, middlewares, handler).
# An application that routes a request to another (the namespaces' front) has no public hook
# between the connection and the router; `Application.dispatch` overrides this.
AIOHTTP_HANDLE = web.Application._handle


def set_match_info(request: web.Request, match_info: web.UrlMappingMatchInfo) -> None:
    """The route found for a request, set as aiohttp's own `_handle` sets it.

    _match_info: `request.match_info` is read-only; a request resolved by the front (routed to
    another namespace's world, or its route remembered) must carry the match as aiohttp's would.
    """
    request._match_info = match_info


def open_connections(server: web.Server) -> int:
    """_connections: the server's table of its open connections (the one being made included);
    aiohttp keeps the count for its shutdown and offers no public reader of it."""
    return len(server._connections)


def has_subapps(app: web.Application) -> bool:
    """_subapps: whether sub-applications are added (no public accessor says so)."""
    return bool(app._subapps)


def buffered_body(content: StreamReader) -> bytes | None:
    """The whole body when it came with its head and nothing has read it; None otherwise.

    `request.read()` awaits the stream twice more to learn what is already known, and
    `read_nowait` re-runs the connection's parser on an empty chunk and resumes the transport:
    a twentieth of a payment's creation between them. A body at or above the stream's low-water
    mark is left to be read the usual way (its flow control may have paused the transport).
    _buffer, _eof, _cursor, _size, _low_water: the stream's state, with no public reader that
    leaves it unconsumed (the caller checks the class is aiohttp's own `StreamReader` first).
    """
    buffer = content._buffer
    if not (content._eof and buffer) or content._cursor or content._size >= content._low_water:
        return None
    return buffer[0] if len(buffer) == 1 else b"".join(buffer)


# --- The connection: a deadline on each request head ------------------------------------------


class HeadDeadlineProtocol(RequestHandler):
    """aiohttp's per-connection protocol with a deadline on each request head (see
    simulator/http/server.py, whose `ConnectionHandler` adds the API's error envelope).

    RequestHandler: aiohttp builds its protocol itself with no setting to pick another class
    (`Application.protocol` below), and it has no head deadline of its own: its `timeout`
    settings cover keep-alive idleness and a handler's run, not a client trickling its head.
    """

    def __init__(self, manager: web.Server, *, header_timeout: float, **kwargs: Any) -> None:
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
        # _request_count: how many heads the parser has completed on this connection; a change
        # across a chunk is the only sign that a whole head arrived (no callback says so).
        heads = self._request_count
        RequestHandler.data_received(self, data)
        if self._request_count != heads:
            if self._head_timer is not None:
                self._disarm_head_timer()  # a whole head arrived: its handler takes over
        elif data and self._head_timer is None and self._awaiting_head():
            self._arm_head_timer()  # the start of the next head on a kept-alive connection

    def drop_after_response(self, seconds: float) -> None:
        """Close the connection at most `seconds` after the current response is written.

        _lingering_time: aiohttp reads and drops an unread body for up to 10 s after the answer
        (a socket closed with unread bytes sends a reset, which can cost the client the answer);
        the setting is per server, and a refused body's connection needs it shorter."""
        self._lingering_time = min(self._lingering_time, seconds)

    def _awaiting_head(self) -> bool:
        """No request is being handled: the connection waits for the next request's head.
        (Body bytes arrive while a handler runs, so they never start the deadline.)

        _waiter: the future the protocol's request loop waits on for the next head; no public
        attribute tells an idle connection from one whose request is being handled."""
        waiter = self._waiter
        return waiter is not None and not waiter.done()

    def _arm_head_timer(self) -> None:
        if self.header_timeout > 0:
            # _loop: the protocol's event loop (the running loop, named as aiohttp keeps it).
            self._head_timer = self._loop.call_later(self.header_timeout, self._head_overdue)

    def disarm_head_deadline(self) -> None:
        """No deadline for this connection's head any more (a connection refused at once)."""
        self._disarm_head_timer()

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_overdue(self) -> None:
        self._head_timer = None
        if self._awaiting_head():  # still no whole head: a client this slow gets no more time
            self.force_close()


class _ProtocolServer(web.Server):
    """aiohttp's server, making its application's `protocol` for each connection."""

    protocol: type[RequestHandler] = RequestHandler

    def __call__(self) -> RequestHandler:
        # __call__: what asyncio calls for each new connection (the protocol factory); the
        # class it builds is fixed in aiohttp. _loop, _kwargs: the loop and the protocol's
        # settings (timeouts, limits) aiohttp's own `__call__` passes.
        return self.protocol(self, loop=self._loop, **self._kwargs)


# aiohttp discourages subclassing its Application (it warns at class creation); this one only
# swaps the server class and names the request hook, which aiohttp offers no other way to do.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)

    class Application(web.Application):
        """`web.Application` whose connections are `protocol`s and whose requests go through
        `dispatch` (aiohttp's own handling, unless a subclass routes them elsewhere)."""

        protocol: type[RequestHandler] = RequestHandler
        dispatch = AIOHTTP_HANDLE

        def __init_subclass__(cls, **kwargs: Any) -> None:
            super().__init_subclass__(**kwargs)
            own = vars(cls).get("dispatch")
            if own is not None:
                # _handle: what aiohttp's server calls for each request (bound when the server
                # is made); a subclass's `dispatch` becomes it, with no frame in between.
                cls._handle = own  # type: ignore[method-assign]  # the hook aiohttp calls

        def _make_handler(self, **kwargs: Any) -> web.Server:
            # _make_handler: where aiohttp's runner makes the server; the only place its class
            # can be chosen (AppRunner takes no server or protocol class).
            server = super()._make_handler(**kwargs)
            server.__class__ = _ProtocolServer
            server.protocol = self.protocol  # type: ignore[attr-defined]  # the swapped class has it
            wrap = self.request_wrapper()
            if wrap is not None:  # request_handler: public, the server's per-request callable
                server.request_handler = wrap(server.request_handler)
            return server

        def request_wrapper(self) -> Callable[[Any], Any] | None:
            """A layer around every request's handling (team mode's audit), or None: made
            once, when the server is, so a server without it pays nothing per request."""
            return None


# --- A response in one write ------------------------------------------------------------------

# Answers aiohttp sends without a body (RFC 9110): `Answer` leaves them to aiohttp.
_BODILESS_METHODS = (hdrs.METH_HEAD, hdrs.METH_CONNECT)
_BODY_STATUSES = frozenset(range(200, 600)) - {204, 304}


class Answer(web.Response):
    """`web.Response` for the API's answers, whose usual case is sent in one step.

    aiohttp prepares a response in half a dozen coroutine and property calls (its headers, the
    request's keep-alive, the status line, then the body in a call of its own), an eighth of
    the HTTP layer's work on a payment's creation. A bytes body over HTTP/1.1 with no cookie, no
    compression, no chunking and a status and method that allow a body is sent here the same
    way, with the same headers in the same order (Content-Length, Date, Server, Connection:
    close when the connection is not kept), through the connection's own writer; anything
    else is aiohttp's own `prepare`. The head is serialised by aiohttp's own function for it, the
    one its writer uses.

    StreamResponse's public API would do the same in several awaits (`prepare`, `write`,
    `write_eof`): tried for issue 32, it is the path this class skips. The private attributes
    below are StreamResponse's state, read and set as its own `prepare` and `write_eof` do:
    _headers, _body, _status, _reason, _keep_alive, _chunked, _compression, _cookies: the
    response's fields, read without the property calls; _payload_writer, _req, _eof_sent,
    _must_be_empty_body, _body_length: what `prepare` and `write_eof` record, set so the rest of
    aiohttp (its access log, `keep_alive`, a second `prepare`) sees a sent response;
    _zlib_executor_size, _zlib_executor: set as `web.Response.__init__` sets them."""

    def __init__(
        self,
        *,
        body: bytes,
        status: int = 200,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """`web.Response(body=..., status=..., content_type=..., headers=...)`, less what a
        bytes body never needs (text, charset, a payload's own headers)."""
        super(web.Response, self).__init__(status=status, headers=headers)
        if hdrs.CONTENT_TYPE in self._headers:
            raise ValueError("a Content-Type header and content_type are not allowed together")
        self._headers[hdrs.CONTENT_TYPE] = content_type
        self._body = body
        self._zlib_executor_size = MAX_SYNC_CHUNK_SIZE
        self._zlib_executor = None

    async def prepare(self, request: BaseRequest) -> Any:
        body = self._body
        if (
            type(body) is not bytes
            or not body
            or self._payload_writer is not None
            or self._eof_sent
            or self._chunked
            or self._compression
            or self._cookies
            or self._status not in _BODY_STATUSES
            or request.method in _BODILESS_METHODS
            or request.version != HttpVersion11
        ):
            return await super().prepare(request)
        headers = self._headers
        if hdrs.CONTENT_LENGTH in headers:
            return await super().prepare(request)
        keep_alive = self._keep_alive
        if keep_alive is None:
            keep_alive = self._keep_alive = request.keep_alive
        length = len(body)
        headers[hdrs.CONTENT_LENGTH] = str(length)
        headers.setdefault(hdrs.CONTENT_TYPE, "application/octet-stream")
        if hdrs.DATE not in headers:
            headers[hdrs.DATE] = rfc822_formatted_time()
        headers.setdefault(hdrs.SERVER, SERVER_SOFTWARE)
        if not keep_alive and hdrs.CONNECTION not in headers:
            headers[hdrs.CONNECTION] = "close"
        writer = request.writer
        self._req = request
        self._payload_writer = writer
        self._must_be_empty_body = False
        writer.length = length
        # The apps' `on_response_prepare` signals, when one has any (the API's have none).
        # _match_info: the request's match, read without the property (None before routing);
        # _prepare_hook: aiohttp's sending of those signals, which has no public name.
        match_info = request._match_info if isinstance(request, web.Request) else None
        for app in match_info.apps if match_info is not None else ():
            if app.on_response_prepare:
                await request._prepare_hook(self)
                break
        # The head as the writer's `write_headers` serialises it, sent with the body in one
        # write (what it does with a buffered head), without the coroutine and the join.
        head = _serialize_headers(f"HTTP/1.1 {self._status} {self._reason}", headers)
        await writer.write_eof(head + body)
        self._eof_sent = True
        self._req = None
        self._body_length = writer.output_size
        self._payload_writer = None
        return writer
