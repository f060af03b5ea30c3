"""What `payorch serve` prints for requests it cannot read: one short line each, no traceback.

A fuzzer's run (garbage bytes, bad request lines, over-long headers, broken chunked bodies,
bodies cut short) used to write a full traceback per request to the server's output: 580 of
them, 460 KB, in one run. A real process on a free port, fed over raw sockets.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]
SANDBOX_SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"

# What the HTTP layer cannot read: each one is answered (400 in the envelope, where a response
# can still be written) and is one line in the server's output.
UNREADABLE = [
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(32)),  # TLS to a plain port
    b"GARBAGE\r\n\r\n",
    b"GET /api/v1/ping HTTP/9.9\r\nHost: x\r\n\r\n",
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n",
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
    b"GET /api/v1/ping HTTP/1.1\r\nHost: x\r\nX-Test: a\x01b\r\n\r\n",
    b"POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n",
    b"POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n",
]
# Well-formed HTTP with a body the API refuses: an ordinary 400 answer, like any other, in the
# request log and not in the server's output.
BAD_JSON = [b'{"apiKey": ', b"[1, 2", b'{"apiKey": "x", "apiKey": "y"}']


def exchange(port: int, raw: bytes) -> bytes:
    """Send `raw` and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        return answer


def ping(port: int) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/ping", headers={"Authorization": f"Bearer {SANDBOX_SK}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def test_each_malformed_request_is_one_short_line_and_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*PAYORCH, "serve", "--port", "0", "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        listening = proc.stdout.readline()
        port = int(listening.rsplit(":", 1)[1])
        for raw in UNREADABLE:
            answer = exchange(port, raw)
            assert answer.split(b" ", 2)[1] == b"400", (raw[:40], answer[:200])
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == (
                "invalid_request"
            )
        # A body the client gives up on half-way: nobody to answer, still one line.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                b"POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            assert ping(port) == 200  # by then the server is reading that body
        for body in BAD_JSON:
            answer = exchange(
                port,
                b"POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body,
            )
            assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "invalid_json"
        assert ping(port) == 200
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    output = (out + err).splitlines()
    assert "Traceback" not in out + err, err
    refused = [line for line in output if line.startswith("refused a request from ")]
    assert len(refused) == len(UNREADABLE) + 1, output
    assert all(len(line) <= 300 for line in refused), refused
    assert len(output) == len(refused), output  # nothing else
