"""A real `payorch serve` under a low open-files limit (issue 31 item 3): it raises its soft limit
to the hard one, keeps its namespaces' worlds and connections within what is left (a world
unloaded, a connection answered 503, never EMFILE's 500), and logs an exhausted `accept` once
per interval, not once per attempt."""

from __future__ import annotations

import json
import re
import resource
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_serve import PAYORCH, SANDBOX_SK

SHOP = "shp_mazul_tienda"


class LimitedServer:
    def __init__(self, data_dir: Path, soft: int, hard: int) -> None:
        def limit() -> None:  # in the child, before exec: as `ulimit -n` would
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir), "--no-rate-limit"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limit,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), line
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1])

    def call(self, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[LimitedServer]]:
    started: list[LimitedServer] = []
    yield started
    for server in started:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.communicate()


def _soft_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-files line")


def test_the_soft_limit_is_raised_to_the_hard_one(
    tmp_path: Path, servers: list[LimitedServer]
) -> None:
    server = LimitedServer(tmp_path / "data", 256, 1024)
    servers.append(server)
    assert _soft_limit(server.proc.pid) == 1024


def test_more_namespaces_than_open_files_allow_are_served_never_a_500(
    tmp_path: Path, servers: list[LimitedServer]
) -> None:
    # 256 descriptors, hard as well: room for ~100 worlds of 2 files each, if nothing else.
    server = LimitedServer(tmp_path / "data", 256, 256)
    servers.append(server)
    statuses: Counter[int] = Counter()
    for i in range(150):
        status, created = server.call("PUT", f"/_sim/namespaces/files-{i}", SANDBOX_SK)
        assert status == 201, created
        key = next(
            k["secretKey"]
            for k in created["keys"]
            if k["shopId"] == SHOP and k["environment"] == "sandbox"
        )
        status, body = server.call(
            "POST", "/api/v1/payments", key, {"amount": 50, "paymentMethodId": "1001"}
        )
        statuses[status] += 1
        assert status < 500, body
    assert statuses == {200: 150}


def _read_until_closed(connection: socket.socket) -> bytes:
    chunks = []
    while chunk := connection.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def test_connections_past_the_limit_get_503_and_one_log_line(
    tmp_path: Path, servers: list[LimitedServer]
) -> None:
    server = LimitedServer(tmp_path / "data", 256, 256)
    servers.append(server)
    silent = []
    try:
        for _ in range(600):
            connection = socket.socket()
            connection.settimeout(10)
            connection.connect(("127.0.0.1", server.port))
            silent.append(connection)
        time.sleep(1.5)
        answer = _read_until_closed(silent[-1])  # answered, not left hanging
    finally:
        for connection in silent:
            connection.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    error = json.loads(body)["error"]
    # The catalogue's envelope, as every other refusal (simulator/http/responses.py).
    assert status_line == "HTTP/1.1 503 Service Unavailable"
    assert (error["code"], error["type"]) == ("service_unavailable", "api_error")
    assert re.fullmatch(r"The server has \d+ connections open, .*", error["message"])
    assert headers["X-Request-Id"] == error["requestId"]
    assert error["requestId"].startswith("req_")
    assert (headers["Retry-After"], headers["Connection"]) == ("1", "close")
    assert int(headers["Content-Length"]) == len(body)
    # And it serves again, once it has seen the 600 connections close (no guessed wait: on a
    # loaded machine that can take longer than half a second).
    deadline = time.monotonic() + 10
    while (status := server.call("GET", "/api/v1/ping", SANDBOX_SK)[0]) == 503:
        assert time.monotonic() < deadline, "still refusing 10 s after the connections closed"
        time.sleep(0.1)
    assert status == 200
    lines = server.stop().splitlines()
    assert 1 <= len(lines) <= 4, lines[:20]
