"""Connections held by clients that are too slow, on raw sockets (the HTTP client libraries do
not send a head one byte at a time or stop reading on request).

The bounds are per connection: a request head must arrive whole within `header_timeout`
(simulator/http/server.py), its body within `body_timeout` (simulator/http/requests.py), and an
event-stream reader that takes nothing for the stream's write timeout is cut off and its queued
events dropped (simulator/events/stream.py).
"""

from __future__ import annotations

import asyncio
import errno
import json
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simulator.app import create_app
from simulator.domain.requestlog import make_row
from simulator.http.keys import BUS, REQUEST_LOG, REQUEST_TAIL, RESET, STREAM
from simulator.settings import Settings
from tests.api.test_checkout import new_session
from tests.conftest import KEYS, Api

HEADER_TIMEOUT = 0.5
SCOPE = ("mer_mercadoazul", "sandbox")


async def server(aiohttp_client: Any, tmp_path: Path, body_timeout: float = 10.0) -> Api:
    settings = Settings(
        data_dir=tmp_path / "data",
        tick_seconds=0,
        seed=1234,
        rate_limit=False,
        header_timeout=HEADER_TIMEOUT,
        body_timeout=body_timeout,
    )
    return Api(await aiohttp_client(create_app(settings)))


async def connect(api: Api, receive_buffer: int | None = None) -> tuple[Any, Any]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:  # before connecting, so the TCP window starts small
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (api.client.host, api.client.port))
    return await asyncio.open_connection(sock=sock)


async def closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    """Whether the server ends the connection within `within` seconds (everything it sent
    before is read and dropped)."""
    try:
        async with asyncio.timeout(within):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


def request(path: str = "/api/v1/ping", body: bytes = b"", method: str = "GET") -> bytes:
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Bearer {KEYS.sandbox_sk}\r\n"
    )
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n"


async def response_status(reader: asyncio.StreamReader) -> int:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    return int(head.split(b" ", 2)[1])


# -- request heads ----------------------------------------------------------------------------


async def test_a_head_sent_one_byte_at_a_time_is_cut_off(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api = await server(aiohttp_client, tmp_path)
    reader, writer = await connect(api)
    started = time.monotonic()
    sending = asyncio.ensure_future(_trickle(writer, request(), every=0.05))
    try:
        assert await closed_by_server(reader, within=HEADER_TIMEOUT + 3)
    finally:
        sending.cancel()
        writer.close()
    # Sending kept going all along: bytes arriving do not extend the deadline.
    assert time.monotonic() - started < HEADER_TIMEOUT + 2


async def _trickle(writer: asyncio.StreamWriter, data: bytes, every: float) -> None:
    for byte in data:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(every)


async def test_a_connection_that_sends_nothing_is_closed(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api = await server(aiohttp_client, tmp_path)
    reader, writer = await connect(api)
    assert await closed_by_server(reader, within=HEADER_TIMEOUT + 3)
    writer.close()


async def test_a_prompt_client_keeps_its_connection_between_requests(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """The deadline is for heads only: a body sent after its head, and an idle kept-alive
    connection longer than the deadline, are left alone."""
    api = await server(aiohttp_client, tmp_path)
    reader, writer = await connect(api)
    body = b'{"amount": 5, "paymentMethodId": "1001"}'
    writer.write(request("/api/v1/payments", body, "POST"))
    await writer.drain()
    await asyncio.sleep(HEADER_TIMEOUT / 2)
    writer.write(body)
    assert await response_status(reader) == 200
    await asyncio.sleep(HEADER_TIMEOUT * 3)  # idle, kept alive
    writer.write(request())
    assert await response_status(reader) == 200
    writer.close()


# -- request bodies ---------------------------------------------------------------------------

TOKEN_BODY = json.dumps({"apiKey": KEYS.sandbox_pk, "secretKey": KEYS.sandbox_sk}).encode()


async def start_trickle(api: Api) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A `POST /api/v1/auth/token` (no credential needed) whose head arrives whole and whose
    body's first byte follows: the rest is the caller's to send, or not."""
    reader, writer = await connect(api)
    writer.write(
        b"POST /api/v1/auth/token HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(TOKEN_BODY)}\r\n\r\n".encode()
        + TOKEN_BODY[:1]
    )
    await writer.drain()
    return reader, writer


async def test_a_body_sent_one_byte_at_a_time_is_answered_408_and_cut_off(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api = await server(aiohttp_client, tmp_path, body_timeout=0.3)
    reader, writer = await start_trickle(api)
    sending = asyncio.ensure_future(_trickle(writer, TOKEN_BODY[1:], every=0.05))
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = await asyncio.wait_for(reader.readexactly(length), 5)
        assert await closed_by_server(reader, within=5)
        assert not sending.done()  # still sending: the connection was cut mid-body
    finally:
        sending.cancel()
        writer.close()
    assert head.startswith(b"HTTP/1.1 408 "), head
    assert b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert error["code"] == "request_timeout" and error["type"] == "invalid_request_error"
    assert error["details"]["timeoutSeconds"] == 0.3
    assert 1 <= error["details"]["receivedBytes"] < len(TOKEN_BODY)


async def test_a_body_still_arriving_holds_neither_a_reset_nor_a_ping(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """The reset would wait up to its whole `wait_seconds` (here far beyond the test's guard)
    for a request it counted as running: a request still reading its body is not one."""
    api = await server(aiohttp_client, tmp_path, body_timeout=0)  # no deadline: it stays
    api.client.server.app[RESET].wait_seconds = 600
    reader, writer = await start_trickle(api)
    try:
        async with asyncio.timeout(30):  # a guard against hanging, not a measure
            resetting = asyncio.ensure_future(api.post("/_sim/reset", KEYS.sandbox_sk, json={}))
            status, body, _ = await api.get("/ping", KEYS.sandbox_sk)
            assert status == 200, body
            status, body, _ = await resetting
            assert status == 200, body
            # The body is still one byte short of its head's Content-Length all along.
            assert not reader.at_eof()
            writer.write(TOKEN_BODY[1:])  # it ends: the request runs, in the new world
            assert await response_status(reader) == 200
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", b"paymentMethodId=1001"),
        (
            "multipart/form-data; boundary=XyZ",
            b'--XyZ\r\nContent-Disposition: form-data; name="paymentMethodId"\r\n\r\n1001\r\n'
            b'--XyZ\r\nContent-Disposition: form-data; name="paymentMethodId"\r\n\r\n1002\r\n'
            b"--XyZ--\r\n",
        ),
    ],
)
async def test_a_form_whose_body_follows_its_head_is_still_read(
    aiohttp_client: Any, tmp_path: Path, content_type: str, body: bytes
) -> None:
    """The body is read off the connection before the page's handler runs; aiohttp's own
    multipart reader could not read it again (a 500 while that reader was used)."""
    api = await server(aiohttp_client, tmp_path)
    token = (await new_session(api, country="MX"))["sessionId"]
    reader, writer = await connect(api)
    writer.write(
        f"POST /checkout/{token}/select HTTP/1.1\r\nHost: localhost\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    await writer.drain()
    await api.get("/ping", KEYS.sandbox_sk)  # by then the head is being handled
    writer.write(body)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    writer.close()
    assert head.startswith(b"HTTP/1.1 303 "), head  # on to the payment page: the method was read


# -- event streams ----------------------------------------------------------------------------


async def open_stalled_stream(
    api: Any, path: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A stream reader with a small receive buffer that reads the head and then nothing more."""
    reader, writer = await connect(api, receive_buffer=4096)
    writer.write(request(path))
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    return reader, writer


async def released(readers: Callable[[], int], reader: asyncio.StreamReader) -> None:
    """The stalled reader was unsubscribed (its queue gone with it) and its connection closed."""
    for _ in range(100):
        if readers() == 0:
            break
        await asyncio.sleep(0.05)
    assert readers() == 0
    assert await closed_by_server(reader, within=5)


async def test_an_event_reader_that_stops_reading_is_cut_off_and_released(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api = await server(aiohttp_client, tmp_path)
    app = api.client.server.app
    stream = app[STREAM]
    stream.write_timeout_seconds = 0.3
    reader, writer = await open_stalled_stream(api, "/_sim/events")
    assert stream.readers(SCOPE) == 1
    # The reader reads nothing more; the events keep coming, about 6 MB of them.
    padding = "x" * 60_000
    for number in range(100):
        app[BUS].emit(*SCOPE, "payment.completed", {"id": f"TXN-{number}", "note": padding})
        await asyncio.sleep(0)
        if stream.readers(SCOPE) == 0:
            break
    await released(lambda: stream.readers(SCOPE), reader)
    writer.close()


async def test_a_request_log_reader_that_stops_reading_is_cut_off_and_released(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """`GET /_sim/requests/stream` (`payorch logs tail`) has the same bound as the event stream:
    its loop was a copy from before stalled readers were bounded (fixed in beee200)."""
    api = await server(aiohttp_client, tmp_path)
    app = api.client.server.app
    tail = app[REQUEST_TAIL]
    tail.write_timeout_seconds = 0.3
    reader, writer = await open_stalled_stream(api, "/_sim/requests/stream")
    assert tail.readers() == 1
    # The reader reads nothing more; the log keeps growing, about 6 MB of summaries (a summary
    # carries the path: these are long ones).
    path = "/api/v1/payments/" + "x" * 60_000
    for number in range(100):
        row = make_row(
            f"req_{number}", 0.0, 0.0, "GET", path, "", 404, SCOPE[0], SCOPE[1], 1.0, False,
            (), None, None,
        )  # fmt: skip
        app[REQUEST_LOG].record(row)
        await asyncio.sleep(0)
        if tail.readers() == 0:
            break
    await released(tail.readers, reader)
    writer.close()


async def stall_server(aiohttp_client: Any, tmp_path: Path) -> Api:
    settings = Settings(
        data_dir=tmp_path / "data",
        tick_seconds=0,
        seed=1234,
        rate_limit=False,
        stream_stall_timeout=STALL,
    )
    return Api(await aiohttp_client(create_app(settings)))


STALL = 0.3


@pytest.mark.parametrize("path", ["/_sim/events", "/_sim/requests/stream"])
async def test_a_stream_reader_that_stops_reading_small_frames_is_cut_off(
    aiohttp_client: Any, tmp_path: Path, path: str
) -> None:
    """Small frames never block a write: the kernel's send buffer takes megabytes of them (it
    grows by itself), so a reader that stopped reading kept its connection, 400 KB and more
    queued for it. What the reader has taken is watched instead, whatever the volume."""
    api = await stall_server(aiohttp_client, tmp_path)
    app = api.client.server.app
    count = app[STREAM].readers if path == "/_sim/events" else app[REQUEST_TAIL].readers
    readers = (lambda: count(SCOPE)) if path == "/_sim/events" else count  # type: ignore[call-arg]  # the two readers' counts take different arguments
    sock = await raw_stalled_stream(api, path)
    assert readers() == 1
    # About 300 KB in 1 KB frames: far below the queue's bound, far above what the reader's
    # 4 KB window takes.
    note = "x" * 1000
    for number in range(300):
        if path == "/_sim/events":
            app[BUS].emit(*SCOPE, "payment.completed", {"id": f"TXN-{number}", "note": note})
        else:
            row = make_row(
                f"req_{number}", 0.0, 0.0, "GET", "/api/v1/payments/" + note, "", 404, SCOPE[0],
                SCOPE[1], 1.0, False, (), None, None,
            )  # fmt: skip
            app[REQUEST_LOG].record(row)
        await asyncio.sleep(0)
    for _ in range(100):
        if readers() == 0:
            break
        await asyncio.sleep(0.05)
    assert readers() == 0
    # Reset, not closed: a closed socket's kernel would go on offering the reader its unsent
    # bytes, and the reader would never learn that the stream is over.
    assert await reset_by_server(sock)
    sock.close()


async def raw_stalled_stream(api: Api, path: str) -> socket.socket:
    """A stream reader that takes nothing past the response's head: a 4 KB receive buffer, and
    no event loop reading the socket into a buffer of its own."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (api.client.host, api.client.port))
    await loop.sock_sendall(sock, request(path))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += await loop.sock_recv(sock, 1)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    return sock


async def reset_by_server(sock: socket.socket, within: float = 5.0) -> bool:
    """Whether the server resets the connection within `within` seconds (seen in the socket's
    pending error, which reads no data)."""
    for _ in range(int(within / 0.05)):
        if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNRESET:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_stream_reader_that_keeps_reading_is_never_cut_off(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """Events keep coming for several stall periods, with quiet spells longer than one: a reader
    taking them as they come (or with nothing to take) keeps its stream."""
    api = await stall_server(aiohttp_client, tmp_path)
    app = api.client.server.app
    response = await api.client.get(
        "/_sim/events", headers={"Authorization": f"Bearer {KEYS.sandbox_sk}"}
    )
    assert response.status == 200
    received: list[str] = []

    async def read() -> None:
        while line := await response.content.readline():
            if line.startswith(b"data: "):
                received.append(json.loads(line[6:])["data"]["id"])

    reading = asyncio.ensure_future(read())
    note = "x" * 10_000
    for burst in range(3):
        for number in range(50):  # 500 KB a burst, well past the socket's buffers
            app[BUS].emit(
                *SCOPE, "payment.completed", {"id": f"TXN-{burst}-{number}", "note": note}
            )
            await asyncio.sleep(0)
        await asyncio.sleep(STALL * 2)  # quiet: nothing waits for the reader, nothing to cut
    for _ in range(100):
        if len(received) == 150 or reading.done():
            break
        await asyncio.sleep(0.05)
    assert app[STREAM].readers(SCOPE) == 1 and not reading.done()
    assert received == [f"TXN-{b}-{n}" for b in range(3) for n in range(50)]
    reading.cancel()
    response.close()


async def test_a_reader_whose_queue_passes_a_mebibyte_is_closed(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """The queue of frames not yet written is bounded in bytes as well as in frames: 20 events
    of 60 KB, far fewer than the 1,000 frames allowed, end the stream."""
    api = await server(aiohttp_client, tmp_path)
    app = api.client.server.app
    with app[STREAM].subscribe(SCOPE) as queue:  # a reader whose writer never runs
        for number in range(20):
            app[BUS].emit(
                *SCOPE, "payment.completed", {"id": f"TXN-{number}", "note": "x" * 60_000}
            )
            await asyncio.sleep(0)
        assert queue.qsize() == 1 and queue.get_nowait() is None  # dropped, and ended


# -- requests aiohttp cannot parse ------------------------------------------------------------

MALFORMED = [
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",  # a space in a name
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Test: a\x01b\r\n\r\n",  # a control character
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n",
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
    b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n",
    b"G\x00T /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n",  # not a method
    b"GET /api/v1/ping HTTP/9.9\r\nHost: x\r\n\r\n",
]


async def test_a_request_aiohttp_cannot_parse_gets_the_error_envelope(api: Api) -> None:
    for raw in MALFORMED:
        reader, writer = await connect(api)
        writer.write(raw)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        body = await asyncio.wait_for(reader.read(), 5)  # the server closes the connection
        writer.close()
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        assert re.match(r"HTTP/1\.[01] 400 ", lines[0]), (raw[:40], head, body)
        assert headers["content-type"].startswith("application/json"), (raw[:40], head)
        error = json.loads(body)["error"]
        assert error["code"] == "invalid_request" and error["type"] == "invalid_request_error"
        assert error["requestId"].startswith("req_") == headers["x-request-id"].startswith("req_")
        assert error["requestId"] == headers["x-request-id"]
        assert error["message"] and error["details"]["reason"], error
        assert all(" " <= c <= "~" for c in error["details"]["reason"]), error
