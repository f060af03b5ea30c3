"""`payorch record`, the issue's acceptance as a user runs it: a journey driven over plain HTTP
(as with curl) against a real `payorch serve`, recorded, the server reset, the recorded scenario
run green; then run against a server that behaves differently (another BRL rate), it fails with
a readable diff. And the errors: an empty log, a log turned off, a bad --since."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import yaml

from tests.cli.test_serve import PAYORCH, SANDBOX_SK

BUILTIN_FIXTURES = Path(__file__).resolve().parents[2] / "simulator" / "fixtures"


class Serve:
    """A real `payorch serve` on a free port."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), line
        self.url = line.split()[-1]

    def curl(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {SANDBOX_SK}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=15)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Serve]:
    running = Serve(tmp_path / "data")
    yield running
    running.stop()


def payorch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PAYORCH, *args], capture_output=True, text=True, timeout=60)


def journey(server: Serve) -> str:
    """Create (PIX, BRL), simulate paid, advance two days, refund half, read the balance."""
    server.curl("POST", "/api/v1/webhooks", {"events": "*"})  # a managed inbox: events kept
    tx = server.curl(
        "POST",
        "/api/v1/payments",
        {"amount": 100, "paymentMethodId": "sbx_pix", "documentId": "52998224725"},
    )["transactionId"]
    server.curl("POST", f"/api/v1/payments/{tx}/simulate", {"action": "paid"})
    server.curl("POST", "/_sim/clock/advance", {"seconds": 172800})
    server.curl("POST", f"/api/v1/payments/{tx}/refund", {"amount": 250})
    server.curl("GET", "/api/v1/me/balance")
    server.curl("GET", f"/api/v1/payments/{tx}")
    return str(tx)


def test_a_recorded_journey_replays_green_and_fails_readably_elsewhere(
    server: Serve, tmp_path: Path
) -> None:
    tx = journey(server)
    path = tmp_path / "journey.yaml"
    recorded = payorch("record", "--base-url", server.url, "-o", str(path))
    assert recorded.returncode == 0, recorded.stderr
    # The managed inbox's subscription is not a step: counted apart, with why.
    assert "Recorded 6 requests as" in recorded.stderr
    assert (
        "Left out 1 request a replay must not repeat: POST /api/v1/webhooks (the scenario "
        "runner subscribes its own receiver).\n"
    ) in recorded.stderr
    text = path.read_text()
    # The editor's schema pointer names the schema file this payorch ships, wherever the file
    # is written (not a path into a source checkout relative to it).
    pointer = text.splitlines()[0]
    assert pointer.startswith("# yaml-language-server: $schema=file:///"), pointer
    assert Path(unquote(urlparse(pointer.split("=", 1)[1]).path)).is_file()
    assert "payorch scenario schema" in text.splitlines()[1]
    assert tx not in text  # ids are saved and reused, never literal
    steps = yaml.safe_load(text)["steps"]
    kinds = [next(iter(k for k in s if k not in ("as", "save", "expect"))) for s in steps]
    assert kinds.count("advance_clock") == 1
    events = {s["expect_event"]["type"] for s in steps if "expect_event" in s}
    assert events == {
        "payment.completed",
        "payment.captured",
        "payment.refunded",
        "claim.opened",
    }

    reset = payorch("reset", "--base-url", server.url)
    assert reset.returncode == 0, reset.stderr
    replay = payorch("scenario", "run", str(path), "--base-url", server.url)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "1 passed, 0 failed" in replay.stdout

    # The same journey on a server whose BRL rate is 5.10, not 5.05: the amounts differ.
    fixtures = tmp_path / "fixtures"
    shutil.copytree(BUILTIN_FIXTURES, fixtures)
    fx = fixtures / "fx.yaml"
    assert 'BRL: "5.05"' in fx.read_text()
    fx.write_text(fx.read_text().replace('BRL: "5.05"', 'BRL: "5.10"', 1))
    other = Serve(tmp_path / "other", "--fixtures", str(fixtures))
    try:
        failed = payorch("scenario", "run", str(path), "--base-url", other.url)
    finally:
        other.stop()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    out = failed.stdout
    assert "FAIL  1. POST /payments" in out
    assert "json.amountLocal: expected 505, got 510" in out
    assert "diff (- expected, + actual" in out


def test_last_and_since_choose_the_requests(server: Serve, tmp_path: Path) -> None:
    journey(server)
    last = payorch("record", "--base-url", server.url, "--last", "2")
    assert last.returncode == 0, last.stderr
    steps = yaml.safe_load(last.stdout)["steps"]
    assert [s["request"]["method"] for s in steps] == ["GET", "GET"]
    assert "Recorded 2 requests" in last.stderr
    since = payorch("record", "--base-url", server.url, "--since", "10m")
    # The journey's 7 but its subscription; the reads of the webhooks the first `record` made
    # are payorch's own (tagged), not in the log's default view.
    assert since.returncode == 0 and "Recorded 6 requests" in since.stderr
    assert "Left out 1 request a replay must not repeat: POST /api/v1/webhooks (" in since.stderr
    # --last counts requests that become steps: the recordings' own webhook reads, now the
    # newest entries of the log, are not among them.
    again = payorch("record", "--base-url", server.url, "--last", "2")
    assert again.returncode == 0, again.stderr
    assert yaml.safe_load(again.stdout)["steps"] == steps
    assert again.stderr == last.stderr
    one = payorch("record", "--base-url", server.url, "--last", "1")
    # The recordings' reads after the newest step are not part of `--last`'s range.
    # GET /payments/{tx}: the payment's creation is outside the range, its id a flagged var.
    assert one.stderr == (
        "Recorded 1 request as 1 step (0 expected events); 1 id not created in the recording "
        "(vars flagged UNLINKED in the file).\n"
    )
    future = payorch("record", "--base-url", server.url, "--since", "2999-01-01T00:00:00Z")
    assert future.returncode == 1
    assert "holds no request since 2999-01-01T00:00:00Z" in future.stderr
    bad = payorch("record", "--base-url", server.url, "--since", "yesterday")
    assert bad.returncode == 2 and "neither an ISO time" in bad.stderr
    both = payorch("record", "--base-url", server.url, "--since", "1m", "--last", "1")
    assert both.returncode == 2


def test_an_empty_or_disabled_log_is_a_clear_error(tmp_path: Path) -> None:
    fresh = Serve(tmp_path / "fresh")
    try:
        empty = payorch("record", "--base-url", fresh.url)
    finally:
        fresh.stop()
    assert empty.returncode == 1
    assert "holds no request" in empty.stderr
    off = Serve(tmp_path / "off", "--request-log", "0")
    try:
        with contextlib.suppress(urllib.error.HTTPError):
            off.curl("GET", "/api/v1/payments/TXN-NONE")
        disabled = payorch("record", "--base-url", off.url)
    finally:
        off.stop()
    assert disabled.returncode == 1
    assert "is off (served with --request-log 0)" in disabled.stderr
