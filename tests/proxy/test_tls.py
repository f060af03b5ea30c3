"""`payorch proxy --insecure` against a TLS upstream whose certificate no CA signed (a
self-signed sandbox): without the option the system's CA store refuses it (502 in the envelope,
the message naming the certificate and the option); with it the same request passes, unchanged."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.conftest import Running, call, records, start_proxy

ANSWER = b'{"ok": true, "via": "tls"}'


@pytest.fixture
def self_signed(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server on a self-signed certificate for 127.0.0.1; its base URL."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            *subject,
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ANSWER)))
            self.end_headers()
            self.wfile.write(ANSWER)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_self_signed_upstream_is_refused_without_insecure_and_passes_with_it(
    self_signed: str, tmp_path: Path, processes: list[Running]
) -> None:
    strict = start_proxy(self_signed, tmp_path / "strict")
    processes.append(strict)
    assert "NOT verified" not in strict.stdout.read_text()
    status, _, body = call(strict.url, "GET", "/api/v1/ping", key=None)
    error = json.loads(body)["error"]
    assert status == 502 and error["code"] == "upstream_unreachable", body
    assert "certificate" in error["message"] and "--insecure" in error["message"]
    assert strict.stop() == 0

    loose = start_proxy(self_signed, tmp_path / "loose", "--insecure")
    processes.append(loose)
    assert "TLS certificate is NOT verified" in loose.stdout.read_text()
    status, headers, body = call(loose.url, "GET", "/api/v1/ping", key=None)
    assert (status, body) == (200, ANSWER) and headers["content-type"] == "application/json"
    assert loose.stop() == 0
    exchange = records(tmp_path / "loose")[1]
    assert exchange["comparable"] is True and exchange["response"]["body"] == json.loads(ANSWER)
