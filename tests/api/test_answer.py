"""`Answer` (simulator/http/responses.py) sends its usual case itself: byte for byte what
aiohttp's own `web.Response` sends, on raw sockets, whatever the request and response."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from aiohttp import web

from simulator.http.responses import Answer

BODY = b'{"ok":true}'


def _respond(kind: type[web.Response], request: web.Request) -> web.Response:
    query = request.query
    response = kind(
        body=BODY if "empty" not in query else b"",
        status=int(query.get("status", "200")),
        content_type="application/json",
        headers={"X-Extra": "1"} if "extra" in query else None,
    )
    if "close" in query:
        response.force_close()
    if "cookie" in query:
        response.set_cookie("c", "1")
    return response


async def _exchange(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    data = b""
    try:
        async with asyncio.timeout(5):
            while True:
                head, whole, rest = data.partition(b"\r\n\r\n")
                match = re.search(rb"Content-Length: (\d+)", head)
                if whole and (raw.startswith(b"HEAD") or match is None):
                    break  # no body follows (or it runs to the connection's end: read below)
                if whole and match and len(rest) >= int(match.group(1)):
                    break
                chunk = await reader.read(65536)
                if not chunk:
                    break
                data += chunk
    finally:
        writer.close()
    return re.sub(rb"Date: [^\r]*", b"Date: -", data)


@pytest.mark.parametrize(
    "request_line, extra",
    [
        ("POST /{} HTTP/1.1", ""),
        ("POST /{}?status=201&extra=1 HTTP/1.1", ""),
        ("POST /{}?close=1 HTTP/1.1", ""),
        ("POST /{} HTTP/1.1", "Connection: close\r\n"),
        ("POST /{} HTTP/1.0", ""),
        ("POST /{} HTTP/1.0", "Connection: keep-alive\r\n"),
        ("HEAD /{} HTTP/1.1", ""),
        ("POST /{}?status=204 HTTP/1.1", ""),
        ("POST /{}?status=304 HTTP/1.1", ""),
        ("POST /{}?empty=1 HTTP/1.1", ""),
        ("POST /{}?cookie=1 HTTP/1.1", ""),
        ("POST /{}?status=404 HTTP/1.1", ""),
    ],
)
async def test_an_answer_is_sent_as_aiohttp_sends_a_response(
    aiohttp_server: Any, request_line: str, extra: str
) -> None:
    app = web.Application()
    for name, kind in (("plain", web.Response), ("answer", Answer)):

        async def handle(request: web.Request, kind: type[web.Response] = kind) -> web.Response:
            return _respond(kind, request)

        app.router.add_route("*", "/" + name, handle)
    server = await aiohttp_server(app)
    sent = {}
    for name in ("plain", "answer"):
        head = request_line.format(name) + "\r\nHost: test\r\n" + extra + "\r\n"
        sent[name] = await _exchange(server.port, head.encode())
    assert sent["answer"] == sent["plain"]
    assert sent["plain"].startswith(b"HTTP/1.")


async def test_the_usual_answer_is_sent_without_aiohttp_s_prepare(
    aiohttp_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[str] = []
    own = web.Response.prepare

    async def spy(self: web.Response, request: Any) -> Any:
        prepared.append(request.path)
        return await own(self, request)

    monkeypatch.setattr(web.Response, "prepare", spy)
    app = web.Application()
    for name, kind in (("plain", web.Response), ("answer", Answer)):

        async def handle(request: web.Request, kind: type[web.Response] = kind) -> web.Response:
            return _respond(kind, request)

        app.router.add_post("/" + name, handle)
    server = await aiohttp_server(app)
    for name in ("answer", "plain"):
        await _exchange(server.port, f"POST /{name} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    assert prepared == ["/plain"]


async def test_an_answer_sends_the_apps_response_prepare_signals(aiohttp_server: Any) -> None:
    async def sign(request: web.Request, response: web.StreamResponse) -> None:
        response.headers["X-Signed"] = request.path

    app = web.Application()
    app.on_response_prepare.append(sign)
    for name, kind in (("plain", web.Response), ("answer", Answer)):

        async def handle(request: web.Request, kind: type[web.Response] = kind) -> web.Response:
            return _respond(kind, request)

        app.router.add_post("/" + name, handle)
    server = await aiohttp_server(app)
    sent = {}
    for name in ("plain", "answer"):
        raw = f"POST /{name} HTTP/1.1\r\nHost: test\r\n\r\n".encode()
        sent[name] = (await _exchange(server.port, raw)).replace(b"/plain", b"/answer")
    assert b"X-Signed: /answer" in sent["answer"]
    assert sent["answer"] == sent["plain"]
