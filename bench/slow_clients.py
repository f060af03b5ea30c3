"""Slow and stalled clients against `payorch serve`: how long each holds its connection.

Two clients a hostile or broken integration can be, against a real server (a subprocess on a
free port, as a user runs it):

- a stalled body: `POST /api/v1/auth/token` (no credential needed) whose head arrives whole and
  whose body then comes one byte every 2 s. Measured: how long until the server closes the
  connection (and what it answered), and meanwhile how long a `POST /_sim/reset` and a
  `GET /api/v1/ping` sent on other connections take;
- a stream client that never reads: `GET /_sim/events` (then `GET /_sim/requests/stream`) on a
  socket with a 4 KB receive buffer that reads the response head and then nothing, while
  two other connections create paid payments as fast as they can (each one an event on
  the stream and a summary in the request tail). Measured: how long until the server closes
  it, and the most bytes the server's socket held for it (`ss`'s Send-Q).

Each wait is bounded (--limit seconds, 45 by default): "> 45 s" means the server never closed it.

    python bench/slow_clients.py [--limit 45] [-- extra payorch serve options]
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import AUTH, SK, serve_cmd, start, stop

TCP_ESTABLISHED = 1
BODY = json.dumps({"grantType": "client_credentials", "clientId": "x", "clientSecret": "y"})


def established(sock: socket.socket) -> bool:
    """The client's side of the connection is still open both ways (the server has neither
    closed nor reset it): read from TCP_INFO, which reads no data."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    except OSError:
        return False
    return struct.unpack("B", info[:1])[0] == TCP_ESTABLISHED


def server_send_queue(port: int, client_port: int) -> int:
    """Bytes the server's socket for this client holds unsent or unacknowledged (`ss` Send-Q)."""
    out = subprocess.run(
        ["ss", "-tnH", "state", "all", f"( sport = :{port} and dport = :{client_port} )"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return int(out[2]) if len(out) > 2 and out[2].isdigit() else 0


def timed(port: int, method: str, path: str, body: str | None = None) -> tuple[float, int]:
    """(seconds, status) of one request on a fresh connection."""
    began = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(60)
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    head += f"Authorization: Bearer {SK}\r\n"
    data = (body or "").encode()
    head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    sock.sendall(head.encode() + data)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    return time.perf_counter() - began, int(answer.split(b" ", 2)[1]) if answer else 0


def stalled_body(port: int, limit: float) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
    )
    began = time.monotonic()
    side: dict[str, tuple[float, int]] = {}

    def reset() -> None:
        time.sleep(3)
        side["reset"] = timed(port, "POST", "/_sim/reset", "{}")

    def ping() -> None:
        time.sleep(3.5)  # while the reset runs (before: while it waited for the stalled body)
        side["ping"] = timed(port, "GET", "/api/v1/ping")

    probes = [threading.Thread(target=reset), threading.Thread(target=ping)]
    for probe in probes:
        probe.start()
    answer, sent = b"", 0
    sock.settimeout(0.2)
    while time.monotonic() - began < limit:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            chunk = None
        except ConnectionError:
            break
        if chunk == b"":
            break
        if chunk:
            answer += chunk
            continue
        if sent < len(BODY) and time.monotonic() - began >= 2 * sent:
            try:
                sock.sendall(BODY[sent].encode())
            except OSError:
                break
            sent += 1
    lived = time.monotonic() - began
    sock.close()
    for probe in probes:
        probe.join()
    status = answer.split(b"\r\n", 1)[0].decode() or "no answer"
    code = ""
    if b"\r\n\r\n" in answer:
        try:
            code = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"]
        except (ValueError, KeyError):
            code = "?"
    shown = f"> {limit:.0f} s (never closed)" if lived >= limit else f"{lived:.1f} s"
    print(
        f"stalled body: connection lived {shown}; {sent} body bytes sent; answer: {status} {code}"
    )
    for name, (seconds, status_code) in side.items():
        print(f"  {name} sent meanwhile: {status_code} in {seconds:.2f} s")


def stalled_stream(port: int, path: str, limit: float) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SK}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)  # the head, byte by byte: nothing past it is read
    client_port = sock.getsockname()[1]
    began = time.monotonic()
    stopping = threading.Event()
    made = [0]

    def load() -> None:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", port)
        headers = {**AUTH, "Sandbox-Simulate": "paid"}
        payload = json.dumps({"amount": 50, "paymentMethodId": "1001"})
        while not stopping.is_set():
            conn.request("POST", "/api/v1/payments", payload, headers)
            conn.getresponse().read()
            made[0] += 1
        conn.close()

    workers = [threading.Thread(target=load) for _ in range(2)]
    for worker in workers:
        worker.start()
    most = 0
    while established(sock) and time.monotonic() - began < limit:
        most = max(most, server_send_queue(port, client_port))
        time.sleep(0.25)
    lived = time.monotonic() - began
    stopping.set()
    for worker in workers:
        worker.join()
    sock.close()
    shown = f"> {limit:.0f} s (never closed)" if lived >= limit else f"{lived:.1f} s"
    print(
        f"non-reading {path}: connection lived {shown} under {made[0] / lived:.0f} payments/s; "
        f"server's send queue for it at most {most / 1024:.0f} KB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=45.0)
    parser.add_argument("serve_options", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        proc, port, _ = start(serve_cmd(Path(data) / "data") + args.serve_options)
        try:
            stalled_body(port, args.limit)
            stalled_stream(port, "/_sim/events", args.limit)
            stalled_stream(port, "/_sim/requests/stream", args.limit)
        finally:
            stop(proc)


if __name__ == "__main__":
    sys.exit(main())
