"""`payorch proxy` in front of a real `payorch serve`: what the client sees is what the upstream
sent (status, body bytes, the headers that matter), big answers stream through and are recorded
cut, an upstream that is away or silent is 502/504 in the error envelope and a not-comparable
record, and bad input is one line, exit 2."""

from __future__ import annotations

import hashlib
import json
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.conftest import (
    PAYORCH,
    Running,
    call,
    free_port,
    records,
    start_proxy,
)

HEADERS_THAT_MATTER = ("content-type", "content-length", "location", "retry-after")


def test_answers_reach_the_client_unchanged_and_each_exchange_is_recorded(
    upstream: Running, proxied: Callable[..., Running], tmp_path: Path
) -> None:
    proxy = proxied()
    # A large deterministic answer: the same bytes and headers as straight from the upstream.
    direct = call(upstream.url, "GET", "/api/v1/openapi.json", key=None)
    through = call(proxy.url, "GET", "/api/v1/openapi.json", key=None)
    assert through[0] == direct[0] == 200
    assert through[2] == direct[2]
    for name in HEADERS_THAT_MATTER:
        assert through[1].get(name) == direct[1].get(name), name
    # A write answered twice by the upstream's idempotency: byte for byte what it stored.
    body = {"amount": 25, "paymentMethodId": "1001"}
    key = {"Idempotency-Key": "proxy-test-1"}
    first = call(proxy.url, "POST", "/api/v1/payments", body, headers=key)
    again = call(upstream.url, "POST", "/api/v1/payments", body, headers=key)
    assert first[0] == again[0] == 200 and first[2] == again[2]
    # An error, a redirect (not followed), a query string.
    missing = call(proxy.url, "GET", "/api/v1/payments/TXN-NOPE0000000000")
    assert missing[0] == 404 and json.loads(missing[2])["error"]["code"] == "transaction_not_found"
    tx = json.loads(first[2])["transactionId"]
    page = _no_redirect(proxy.url + f"/c/{tx}")
    page_direct = _no_redirect(upstream.url + f"/c/{tx}")
    assert page[0] == page_direct[0] and page[1].get("location") == page_direct[1].get("location")
    assert page[1]["content-type"] == page_direct[1]["content-type"]
    listed = call(proxy.url, "GET", "/api/v1/payments?limit=1&offset=0")
    assert listed[0] == 200 and len(json.loads(listed[2])["data"]) == 1

    flushed = json.loads(call(proxy.url, "POST", "/_proxy/flush", key=None)[2])
    assert flushed["exchanges"] == 5
    lines = records(tmp_path / "rec")
    header = lines[0]
    assert header["format"] == "payorch-recording" and header["version"] == 1
    assert header["upstream"] == upstream.url and header["bodyLimit"] == 1024 * 1024
    exchanges = [line for line in lines[1:] if line["kind"] == "exchange"]
    assert [e["seq"] for e in exchanges] == [1, 2, 3, 4, 5]
    assert all(e["comparable"] and e["error"] is None for e in exchanges)
    payment = exchanges[1]
    assert payment["request"]["method"] == "POST"
    assert payment["request"]["body"] == body
    assert re.fullmatch(
        r"Bearer sk_test_REDACTED_\d+", payment["request"]["headers"]["authorization"]
    )
    assert payment["request"]["headers"]["idempotency-key"] == "proxy-test-1"
    assert payment["response"]["status"] == 200
    assert payment["response"]["body"]["transactionId"] == tx
    assert payment["response"]["bodyBytes"] == len(first[2])
    assert exchanges[4]["request"]["query"] == "limit=1&offset=0"
    assert lines[-1]["kind"] == "end" and lines[-1]["exchanges"] == 5
    assert proxy.stop() == 0


def _no_redirect(url: str) -> tuple[int, dict[str, str], bytes]:
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=30)
    connection.request("GET", parts.path)
    answer = connection.getresponse()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()


class Big(BaseHTTPRequestHandler):
    """An upstream of the test's own that answers 10 MB of JSON-looking text, in chunks."""

    size = 10 * 1024 * 1024

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(self.size))
        self.end_headers()
        chunk = (b'{"x": "' + b"a" * 65_000 + b'"}\n')[:65_536]
        sent = 0
        while sent < self.size:
            piece = chunk[: self.size - sent]
            self.wfile.write(piece)
            sent += len(piece)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def big_upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Big)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_10_mb_answer_passes_whole_and_is_recorded_cut(
    big_upstream: str, tmp_path: Path, processes: list[Running]
) -> None:
    proxy = start_proxy(big_upstream, tmp_path / "rec")
    processes.append(proxy)
    direct = call(big_upstream, "GET", "/big", key=None)
    through = call(proxy.url, "GET", "/big", key=None)
    assert len(through[2]) == Big.size
    assert hashlib.sha256(through[2]).digest() == hashlib.sha256(direct[2]).digest()
    assert proxy.stop() == 0
    exchange = records(tmp_path / "rec")[1]
    response = exchange["response"]
    assert response["bodyBytes"] == Big.size and response["truncated"] is True
    assert response["body"] is None
    assert len(response["bodyText"].encode()) == 1024 * 1024
    assert exchange["comparable"] is True


def test_an_unreachable_upstream_is_502_and_not_comparable(
    tmp_path: Path, processes: list[Running]
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proxy = start_proxy(closed, tmp_path / "rec")
    processes.append(proxy)
    status, headers, body = call(proxy.url, "POST", "/api/v1/payments", {"amount": 1})
    assert status == 502 and headers["content-type"].startswith("application/json")
    error = json.loads(body)["error"]
    assert error["code"] == "upstream_unreachable" and error["type"] == "api_error"
    assert error["requestId"].startswith("req_") and error["message"]
    assert proxy.stop() == 0
    exchange = records(tmp_path / "rec")[1]
    assert exchange["response"] is None and exchange["comparable"] is False
    assert exchange["error"]["code"] == "upstream_unreachable"
    assert exchange["request"]["body"] == {"amount": 1}
    assert "exchanges got no answer" in proxy.stderr.read_text()


def test_a_silent_upstream_is_504_after_the_timeout(
    tmp_path: Path, processes: list[Running]
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (the kernel does), never answers
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        proxy = start_proxy(url, tmp_path / "rec", "--timeout", "0.5")
        processes.append(proxy)
        started = time.monotonic()
        status, _, body = call(proxy.url, "GET", "/api/v1/ping")
        assert time.monotonic() - started < 10
        assert status == 504
        assert json.loads(body)["error"]["code"] == "upstream_timeout"
        assert proxy.stop() == 0
    finally:
        silent.close()
    exchange = records(tmp_path / "rec")[1]
    assert exchange["comparable"] is False and exchange["error"]["code"] == "upstream_timeout"


def test_https_to_a_plain_server_is_502_and_insecure_says_what_it_does(
    upstream: Running, tmp_path: Path, processes: list[Running]
) -> None:
    https = upstream.url.replace("http://", "https://")
    proxy = start_proxy(https, tmp_path / "rec", "--insecure")
    processes.append(proxy)
    assert "TLS certificate is NOT verified" in proxy.stdout.read_text()
    status, _, body = call(proxy.url, "GET", "/api/v1/ping")
    assert status == 502 and json.loads(body)["error"]["code"] == "upstream_unreachable"
    assert proxy.stop() == 0


def test_flush_by_signal_writes_the_scenario_and_the_proxy_goes_on(
    proxied: Callable[..., Running], tmp_path: Path
) -> None:
    proxy = proxied()
    call(proxy.url, "POST", "/api/v1/payments", {"amount": 10, "paymentMethodId": "1001"})
    proxy.proc.send_signal(signal.SIGUSR1)
    scenario = tmp_path / "rec" / "scenario.yaml"
    deadline = time.monotonic() + 30
    while not scenario.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "path: /payments" in scenario.read_text()
    call(proxy.url, "GET", "/api/v1/me/balance")
    assert proxy.stop(signal.SIGINT) == 0
    kinds = [line["kind"] for line in records(tmp_path / "rec")[1:]]
    assert kinds == ["exchange", "end", "exchange", "end"]
    assert "/me/balance" in scenario.read_text()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--upstream", "ftp://example.com"], "is not an http:// or https:// URL"),
        (["--upstream", "sandbox.example.com"], "is not an http:// or https:// URL"),
        (["--upstream", "http://x.example?a=1"], "without a query"),
        (["--upstream", "http://x.example:99999"], "port"),
        (["--upstream", "http://x.example", "--forward-webhooks-to", "x"], "--forward-webhooks"),
        (["--upstream", "http://x.example", "--timeout", "0"], "positive number of seconds"),
        (["--upstream", "http://x.example", "--port", "-1"], "too small"),
        (["--upstream", "http://x.example", "--webhook-secret", " "], "is empty"),
        (["--port", "8081"], "Missing option '--upstream'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*PAYORCH, "proxy", *args, "--out", str(tmp_path / "rec")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert words in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "rec" / "exchanges.jsonl").exists()


def test_an_out_that_is_a_file_or_holds_a_recording_is_refused(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    held = tmp_path / "held"
    held.mkdir()
    (held / "exchanges.jsonl").write_text("{}\n")
    for out, words in ((afile, "is a file"), (held, "already holds a recording")):
        done = subprocess.run(
            [*PAYORCH, "proxy", "--upstream", "http://x.example", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("payorch proxy: ")
    assert (held / "exchanges.jsonl").read_text() == "{}\n"


def test_a_taken_port_is_one_line_and_leaves_no_recording(
    upstream: Running, tmp_path: Path
) -> None:
    port = int(upstream.url.rsplit(":", 1)[1])
    done = subprocess.run(
        [
            *PAYORCH,
            "proxy",
            "--upstream",
            upstream.url,
            "--port",
            str(port),
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "the port is taken" in done.stderr, done.stderr
    assert not (tmp_path / "r" / "exchanges.jsonl").exists()


def test_webhooks_without_a_secret_are_unchecked_and_a_receiver_away_is_502(
    upstream: Running, tmp_path: Path, processes: list[Running]
) -> None:
    away = f"http://127.0.0.1:{free_port()}/hooks"
    proxy = start_proxy(upstream.url, tmp_path / "rec", "--forward-webhooks-to", away)
    processes.append(proxy)
    delivery = b'{"id": "evt_1", "type": "payment.completed", "data": {"id": "TXN-1"}}'
    status, _, body = call(
        proxy.url,
        "POST",
        "/_proxy/webhooks",
        raw=delivery,
        key=None,
        headers={"X-Service-Signature": "t=1,v1=ab"},
    )
    assert status == 502  # the upstream retries, as it would with the receiver itself away
    assert json.loads(body)["signature"] == "unchecked"
    assert proxy.stop() == 0
    hook = records(tmp_path / "rec")[1]
    assert hook["kind"] == "webhook" and hook["signature"] == "unchecked"
    assert hook["eventType"] == "payment.completed" and hook["body"]["id"] == "evt_1"
    assert hook["forwarded"]["status"] is None and hook["forwarded"]["error"]
    assert hook["headers"]["x-service-signature"] == "REDACTED"


def test_a_killed_proxy_leaves_whole_lines_and_no_process_behind(
    proxied: Callable[..., Running], tmp_path: Path
) -> None:
    proxy = proxied()
    for _ in range(3):
        call(proxy.url, "GET", "/api/v1/me/balance")
    exchanges = tmp_path / "rec" / "exchanges.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        not exchanges.exists() or exchanges.read_text().count("\n") < 4
    ):
        time.sleep(0.05)
    children = Path(f"/proc/{proxy.proc.pid}/task/{proxy.proc.pid}/children").read_text().split()
    assert len(children) == 1  # the recording process
    proxy.proc.kill()
    proxy.proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{children[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{children[0]}").exists(), "the recording process outlived the proxy"
    lines = exchanges.read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines[1:]] == ["exchange"] * 3
