"""`body_at_hand` (simulator/http/requests.py) reads aiohttp's request stream where it lies: these
tests hold the parts of aiohttp's `StreamReader` it relies on, on raw sockets (a client library
decides for itself how a request is split into packets)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from simulator.http.requests import body_at_hand

BODY = b'{"amount": 50, "paymentMethodId": "1001"}'


def _head(body: bytes, *extra: str, length: int | None = None) -> bytes:
    lines = [
        "POST /echo HTTP/1.1",
        "Host: test",
        "Content-Type: application/json",
        f"Content-Length: {len(body) if length is None else length}",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Echo:
    """A server whose handler reports what `body_at_hand` found, then what `request.read()`
    reads after it (the stream must be left as it was)."""

    def __init__(self) -> None:
        self.found: list[bytes | None] = []
        self.seen = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.found.append(body_at_hand(request))
        self.seen.set()
        return web.Response(body=await request.read())

    async def start(self, aiohttp_server: Any, **options: Any) -> tuple[Any, Any]:
        app = web.Application(**options)
        app.router.add_post("/echo", self.handle)
        app.router.add_get("/echo", self.handle)
        server = await aiohttp_server(app)
        return await asyncio.open_connection(server.host, server.port)


async def _answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"Content-L")
    )
    return head, await reader.readexactly(length)


async def test_a_body_that_came_with_its_head_is_taken_and_left_unread(
    aiohttp_server: Any,
) -> None:
    echo = Echo()
    reader, writer = await echo.start(aiohttp_server)
    for _ in range(3):  # the same connection, kept alive: each request's own body
        writer.write(_head(BODY) + BODY)
        head, body = await _answer(reader)
        assert head.startswith(b"HTTP/1.1 200")
        assert body == BODY
    assert echo.found == [BODY, BODY, BODY]
    writer.close()


async def test_a_body_still_arriving_is_left_to_be_read(aiohttp_server: Any) -> None:
    echo = Echo()
    reader, writer = await echo.start(aiohttp_server)
    writer.write(_head(BODY))
    await writer.drain()
    await echo.seen.wait()  # the handler ran with the head alone
    writer.write(BODY)
    _, body = await _answer(reader)
    assert echo.found == [None]
    assert body == BODY
    writer.close()


async def test_an_encoded_oversized_or_absent_body_is_left_to_read_body(
    aiohttp_server: Any,
) -> None:
    echo = Echo()
    reader, writer = await echo.start(aiohttp_server, client_max_size=len(BODY) - 1)
    writer.write(_head(BODY) + BODY)
    head, _ = await _answer(reader)
    assert head.startswith(b"HTTP/1.1 413")  # aiohttp's own read, which applies the limit
    writer.close()
    reader, writer = await echo.start(aiohttp_server)
    writer.write(_head(BODY, "Content-Encoding: identity") + BODY)
    await _answer(reader)
    writer.write(b"GET /echo HTTP/1.1\r\nHost: test\r\n\r\n")
    await _answer(reader)
    writer.write(_head(b""))
    await _answer(reader)
    assert echo.found == [None, None, None, None]
    writer.close()
