"""What nginx refuses itself, before any worker sees the request, is answered in the API's error
envelope (as one payorch answers the same request: 400 `invalid_request` with
`details.reason`), never with nginx's HTML page: real nginx fed over raw sockets, in front of a
stand-in worker (an extra nginx server answering 200 `up`), and the same through a real
`payorch serve --workers 2`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from simulator.cluster.nginx_config import REFUSAL_PREFIX, Runtime, render
from simulator.cluster.supervisor import free_ports
from tests.cluster.cluster import DEFAULT_SK, Cluster, needs_nginx, nginx_binary

pytestmark = needs_nginx

MALFORMED_LINE = "malformed request line, header or body framing"
URI_TOO_LONG = "request line too long (over 8 KB)"
HEADERS_TOO_LARGE = "request header too large (a header line over 8 KB, or over 32 KB in all)"
# (what is sent, details.reason): every way of a request nginx cannot read that it answers.
REFUSED = [
    pytest.param(b"GARBAGE\r\n\r\n", MALFORMED_LINE, id="garbage-line"),
    pytest.param(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(32)),
        MALFORMED_LINE,
        id="tls-on-the-plain-port",
    ),
    pytest.param(b"GET /api/v1/ping HTTP/1.1\r\n\r\n", MALFORMED_LINE, id="no-host"),
    pytest.param(
        b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
        MALFORMED_LINE,
        id="bad-header-name",
    ),
    pytest.param(
        b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n",
        MALFORMED_LINE,
        id="bad-content-length",
    ),
    pytest.param(
        b"POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n",
        MALFORMED_LINE,
        id="bad-chunked-body",
    ),
    pytest.param(
        b"GET /api/v1/ping HTTP/9.9\r\nHost: x\r\n\r\n", "unsupported HTTP version", id="505"
    ),
    pytest.param(
        b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        "unsupported Transfer-Encoding",
        id="501",
    ),
    pytest.param(
        b"GET /api/v1/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", URI_TOO_LONG, id="414"
    ),
    pytest.param(
        b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n",
        HEADERS_TOO_LARGE,
        id="494-one-header",
    ),
    pytest.param(
        b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-H%d: %s\r\n" % (i, b"a" * 7000) for i in range(6))
        + b"\r\n",
        HEADERS_TOO_LARGE,
        id="494-all-headers",
    ),
]


class Answer:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        head, _, self.body = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/") else 0
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }

    def json(self) -> Any:
        return json.loads(self.body)


def exchange(port: int, raw: bytes, *, then_close: bool = False) -> Answer:
    """Send `raw` (then end the sending side, if `then_close`) and read the answer: until its
    `Content-Length` is in, or nginx closes the connection (or resets it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        if then_close:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while not _whole(answer) and (chunk := sock.recv(65536)):
                answer += chunk
        except ConnectionResetError:
            pass
        return Answer(answer)


def _whole(answer: bytes) -> bool:
    """The head and as many body bytes as it announces (nginx may linger before closing)."""
    head, found, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return bool(found and length and len(body) >= int(length.group(1)))


def assert_refused(answer: Answer, reason: str) -> None:
    assert b"<html" not in answer.raw.lower(), answer.raw[:300]
    assert answer.status == 400, answer.raw[:300]
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "invalid_request" and error["type"] == "invalid_request_error"
    assert error["details"] == {"reason": reason}
    assert error["requestId"] == answer.headers["x-request-id"]
    assert error["requestId"].startswith("req_") and len(error["requestId"]) == 36


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Runtime]]:
    """nginx with the generated configuration (client timeouts of 1 s, so that the stalled
    requests below end at once) in front of a stand-in worker."""
    directory = tmp_path_factory.mktemp("nginx")
    directory.chmod(0o711)
    runtime = Runtime(directory)
    port, worker = free_ports("127.0.0.1", 2)
    text = render(
        [f"127.0.0.1:{worker}"], f"127.0.0.1:{port}", runtime=runtime, client_timeout="1s"
    )
    stand_in = f"    server {{ listen 127.0.0.1:{worker}; location / {{ return 200 'up'; }} }}\n"
    runtime.config.write_text(text.rstrip().removesuffix("}") + stand_in + "}\n")
    nginx = nginx_binary()
    assert nginx is not None
    process = subprocess.Popen(
        runtime.command(nginx),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise AssertionError(runtime.error_log.read_text()) from None
        yield port, runtime
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def proxy_port(proxy: tuple[int, Runtime]) -> int:
    return proxy[0]


@pytest.mark.parametrize(("raw", "reason"), REFUSED)
def test_what_nginx_cannot_read_is_answered_in_the_error_envelope(
    proxy_port: int, raw: bytes, reason: str
) -> None:
    assert_refused(exchange(proxy_port, raw), reason)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\n", id="head"),
        pytest.param(
            b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{",
            id="body",
        ),
    ],
)
def test_a_stalled_request_is_closed_without_an_html_page(proxy_port: int, raw: bytes) -> None:
    """On its own timeouts nginx sends nothing at all (there is no answer to put in the
    envelope): the connection is closed once the client timeout passes."""
    assert exchange(proxy_port, raw).raw == b""


def test_the_error_pages_are_out_of_clients_reach(proxy_port: int) -> None:
    """A client naming a refusal's page reaches a worker like any other path (nginx merges
    its slashes): nothing a client sends changes route."""
    for path in (REFUSAL_PREFIX + "down", "/" + REFUSAL_PREFIX.lstrip("/") + "bad-request"):
        raw = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        answer = exchange(proxy_port, raw)
        assert answer.status == 200 and answer.body == b"up", answer.raw[:300]


def test_trace_refused_by_nginx_is_405_in_the_envelope(proxy_port: int) -> None:
    answer = exchange(proxy_port, b"TRACE /api/v1/ping HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.status == 405 and answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "method_not_allowed" and error["type"] == "invalid_request_error"
    assert error["requestId"] == answer.headers["x-request-id"]


def test_a_body_over_the_limit_is_413_in_the_envelope(proxy_port: int) -> None:
    """Refused on its Content-Length, before nginx reads it, whether or not the client has
    stopped sending by the time nginx answers (it once checked the limit again on the way to
    the error page, and a client already gone got its HTML 413): tried a few times."""
    raw = b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n"
    for then_close in [True, False] * 10:
        answer = exchange(proxy_port, raw, then_close=then_close)
        assert answer.status == 413 and answer.headers["content-type"] == "application/json"
        error = answer.json()["error"]
        assert error["code"] == "payload_too_large" and error["type"] == "invalid_request_error"
        assert error["requestId"] == answer.headers["x-request-id"]


def test_a_fault_of_nginx_itself_is_500_in_the_envelope(proxy: tuple[int, Runtime]) -> None:
    """A body over the in-memory buffer goes to a temp file: one nginx cannot write is its own
    500 (its worker processes run unprivileged when it is started as root)."""
    if os.geteuid() != 0:
        pytest.skip("nginx's workers drop privileges only when it runs as root")
    port, runtime = proxy
    temp = runtime.directory / "client_body"
    temp.chmod(0)
    try:
        raw = (
            b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: 1500000\r\n\r\n"
            + b"{" * 1_500_000
        )
        answer = exchange(port, raw)
    finally:
        temp.chmod(0o700)
    assert answer.status == 500 and answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "internal_error" and error["type"] == "api_error"
    assert error["requestId"] == answer.headers["x-request-id"]


def test_a_well_formed_request_still_reaches_the_worker(proxy_port: int) -> None:
    answer = exchange(
        proxy_port, b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert answer.status == 200 and answer.body == b"up"


def test_payorch_serve_workers_answers_nginx_refusals_in_the_envelope(cluster: Cluster) -> None:
    """The configuration `payorch serve --workers 2` runs has them too; a worker's own answer
    to the same kind of request (a line it cannot parse) is the same envelope."""
    for raw, reason in (
        (b"GARBAGE\r\n\r\n", MALFORMED_LINE),
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", URI_TOO_LONG),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n", HEADERS_TOO_LARGE),
    ):
        assert_refused(exchange(cluster.port, raw), reason)
    # A control character in a header value passes nginx: the worker refuses it, the same way.
    answer = exchange(
        cluster.port,
        f"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {DEFAULT_SK}\r\n"
        "X-Test: a\x01b\r\nConnection: close\r\n\r\n".encode(),
    )
    assert answer.status == 400 and answer.json()["error"]["code"] == "invalid_request"
    assert answer.json()["error"]["requestId"] == answer.headers["x-request-id"]
