"""A reader of the live event stream `GET /_sim/events` (server-sent events, design.md 1.3).

Standard library only, blocking, read in a thread worker. `close()` may be called from any thread:
it shuts the socket down, which wakes a `readline` blocked on it, so the app can quit or switch
keys at once without waiting for the next event or keep-alive.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from payorch_cli.client import TOOL_HEADER, ApiError

# The server sends a comment every 15 s; a stream silent for longer than this is dead (a
# suspended or unplugged server sends no FIN), so the reader gives up and reconnects.
READ_TIMEOUT = 40.0
CONNECT_TIMEOUT = 3.0
RECONNECT_DELAYS = (0.25, 0.5, 1.0, 2.0)  # the server itself suggests 3 s
# A stream that stayed open this long was a working connection: the waits start again. One
# that opens and ends at once (a proxy cutting streams, a flapping server) keeps backing off,
# where starting again at each opening reconnected, and reloaded every screen, 4 times a second.
STABLE_STREAM_SECONDS = 5.0


class ReconnectBackoff:
    """How long to wait before the next attempt, for one reading thread."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._failures = 0
        self._opened_at: float | None = None

    def opened(self) -> None:
        self._opened_at = self._monotonic()

    def next_wait(self) -> float:
        """Called when a stream ended or could not be opened."""
        opened_at, self._opened_at = self._opened_at, None
        if opened_at is not None and self._monotonic() - opened_at >= STABLE_STREAM_SECONDS:
            self._failures = 0
        delay = RECONNECT_DELAYS[min(self._failures, len(RECONNECT_DELAYS) - 1)]
        self._failures += 1
        return delay


@dataclass(frozen=True, slots=True)
class Opened:
    """The server accepted the stream: events from now on will arrive."""


@dataclass(frozen=True, slots=True)
class Envelope:
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Garbled:
    """A `data:` payload that is not a JSON object: reported, then skipped."""

    text: str


Frame = Opened | Envelope | Garbled


class EventStreamReader:
    def __init__(self, base_url: str, api_key: str) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self._conn: http.client.HTTPConnection | None = None
        # The stream's socket, kept apart: the server closes the connection with the stream
        # (`Connection: close`), so http.client hands the socket to the response and forgets it
        # (`conn.sock` is None once the response is read).
        self._sock: socket.socket | None = None
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already gone
                sock.shutdown(socket.SHUT_RDWR)
        conn = self._conn
        if conn is not None:
            conn.close()

    def frames(self) -> Iterator[Frame]:
        """Frames until the stream ends; raises ApiError when it cannot be opened."""
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ApiError("invalid_url", f"Not an http(s) URL: {self.base_url}", 0)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname, parts.port, timeout=CONNECT_TIMEOUT)
        self._conn = conn
        try:
            if self._closed.is_set():
                return
            conn.request(
                "GET",
                parts.path.rstrip("/") + "/_sim/events",
                headers={
                    "Authorization": f"Bearer {self.api_key}",
                    "Accept": "text/event-stream",
                    TOOL_HEADER: "tui",
                },
            )
            self._sock = conn.sock
            if self._closed.is_set():  # closed while connecting: close() saw no socket
                return
            response = conn.getresponse()
            if response.status >= 400:
                raise _error(response.status, response.read())
            if self._sock is not None:
                self._sock.settimeout(READ_TIMEOUT)
            yield Opened()
            yield from _parse(response)
        except ApiError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            if not self._closed.is_set():
                raise ApiError("connection_failed", f"Event stream: {exc!r}", 0) from None
        finally:
            conn.close()


def _error(status: int, raw: bytes) -> ApiError:
    try:
        error = json.loads(raw).get("error", {})
    except (ValueError, AttributeError):
        error = {}
    if not isinstance(error, dict):
        error = {}
    return ApiError(
        str(error.get("code") or f"http_{status}"),
        str(error.get("message") or raw[:200].decode("utf-8", "replace")),
        status,
    )


def _parse(response: http.client.HTTPResponse) -> Iterator[Frame]:
    """SSE framing: `data:` lines accumulate until a blank line; comments and ids are skipped."""
    data: list[bytes] = []
    while line := response.readline():
        line = line.rstrip(b"\r\n")
        if not line:
            if data:
                yield _decode(b"\n".join(data))
                data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
        # `id:`, `retry:`, `event:` and `: comment` lines carry nothing the TUI needs.


def _decode(payload: bytes) -> Frame:
    try:
        event = json.loads(payload)
    except ValueError:
        return Garbled(payload[:200].decode("utf-8", "replace"))
    if not isinstance(event, dict):
        return Garbled(payload[:200].decode("utf-8", "replace"))
    return Envelope(event)
