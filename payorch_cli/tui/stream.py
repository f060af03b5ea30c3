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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from payorch_cli.client import TOOL_HEADER, ApiError

# The server sends a comment every 15 s; a stream silent for longer than this is dead (a
# suspended or unplugged server sends no FIN), so the reader gives up and reconnects.
READ_TIMEOUT = 40.0
CONNECT_TIMEOUT = 3.0


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
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):  # already gone
                conn.sock.shutdown(socket.SHUT_RDWR)
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
            response = conn.getresponse()
            if response.status >= 400:
                raise _error(response.status, response.read())
            if conn.sock is not None:
                conn.sock.settimeout(READ_TIMEOUT)
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
