"""The CLI's HTTP client turns every bad answer into ApiError, never a bare exception."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from payorch_cli.client import ApiError, Client


def serve_once(answer: bytes) -> Iterator[int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def run() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(answer)
        conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield port
    listener.close()


@pytest.fixture
def not_json() -> Iterator[int]:
    body = b"<html>oops</html>"
    yield from serve_once(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s"
        % (len(body), body)
    )


@pytest.fixture
def garbled() -> Iterator[int]:
    yield from serve_once(b"NOT HTTP AT ALL\r\n\r\n")


def test_a_body_that_is_not_json_is_a_bad_response(not_json: int) -> None:
    with pytest.raises(ApiError) as caught:
        Client(f"http://127.0.0.1:{not_json}", "sk_test_x", timeout=5).get("/ping")
    assert caught.value.code == "bad_response" and "not JSON" in caught.value.message


def test_a_garbled_answer_is_a_bad_response(garbled: int) -> None:
    with pytest.raises(ApiError) as caught:
        Client(f"http://127.0.0.1:{garbled}", "sk_test_x", timeout=5).get("/ping")
    assert caught.value.code == "bad_response"


def test_an_unreachable_server_is_connection_failed() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ApiError) as caught:
        Client(f"http://127.0.0.1:{port}", "sk_test_x", timeout=5).get("/ping")
    assert caught.value.code == "connection_failed"
