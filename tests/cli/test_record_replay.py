"""`payorch record` against what a hostile client can put in the log, and a recording a user can
replay again and again (issue 23 items 5 and 17), through the CLI against a real `payorch
serve`:

- any logged content becomes a file or a one-line error, never a traceback: a 30,000-deep
  `[[[…` body (anonymous, or a merchant's) or JSON string, a body nested past what a scenario
  file may hold, a log entry the server cannot serve; what cannot be a step is a comment in the
  file, counted in the summary; `--since 99999999999999d`; `-o` into a missing directory, a
  directory, `/dev/full`;
- every id of a path comes from a saved variable, or from a var flagged `UNLINKED` when its
  creation is not in the recording;
- a recorded journey (payment, simulate paid, refund, balance) replays green twice in a row on
  the same server: balances are checked as changes from the recording's first balance read.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cli.test_record import Serve, payorch
from tests.cli.test_serve import PAYORCH, SANDBOX_SK


class QuietServe(Serve):
    """A real `payorch serve` whose stderr goes to a file: the server's 500 for a log entry it
    cannot serve writes a traceback larger than a pipe holds, and nothing reads the pipe."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True)
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=(data_dir.parent / "serve.err").open("w"),
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), line
        self.url = line.split()[-1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Serve]:
    running = QuietServe(tmp_path / "data")
    yield running
    running.stop()


def send(server: Serve, method: str, path: str, data: bytes, key: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def one_line_error(result: subprocess.CompletedProcess[str], code: int) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("payorch record: ")
    assert result.stderr.count("\n") == 1


def test_hostile_log_content_becomes_a_file_with_comments(server: Serve, tmp_path: Path) -> None:
    deep = b"[" * 30_000 + b"]" * 30_000
    assert send(server, "POST", "/api/v1/payments", deep, None) == 401  # anonymous
    assert send(server, "POST", "/api/v1/payments", deep, SANDBOX_SK) == 400  # not JSON to it
    deep_string = json.dumps({"amount": 100, "description": "[" * 30_000}).encode()
    assert send(server, "POST", "/api/v1/payments", deep_string, SANDBOX_SK) == 400
    # Valid JSON, nested past what a scenario file may hold (the loader's 64 levels).
    nested = b'{"amount": 100, "metadata": ' + b"[" * 100 + b"]" * 100 + b"}"
    assert send(server, "POST", "/api/v1/payments", nested, SANDBOX_SK) == 400
    # Nested past what the server's log walks to mask: served back as masked text, a raw step.
    deeper = b'{"amount": 100, "metadata": ' + b"[" * 900 + b"]" * 900 + b"}"
    assert send(server, "POST", "/api/v1/payments", deeper, SANDBOX_SK) == 400
    server.curl("GET", "/api/v1/me/balance")

    path = tmp_path / "hostile.yaml"
    recorded = payorch("record", "--base-url", server.url, "-o", str(path))
    assert recorded.returncode == 0, recorded.stderr
    assert "Traceback" not in recorded.stderr
    text = path.read_text()
    comments = [line for line in text.splitlines() if line.startswith("# NOT RECORDED:")]
    assert len(comments) == 1, text[:2000]
    assert "nested deeper than 56 levels" in comments[0]
    assert "1 not expressible as a step (comments in the file)" in recorded.stderr
    # What is left is a valid scenario file: the raw `[[[…` bodies are steps.
    validated = payorch("scenario", "validate", str(path))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    steps = yaml.safe_load(text)["steps"]
    assert sum(1 for step in steps if "raw" in step.get("request", {})) >= 1


def test_since_far_back_takes_the_whole_log(server: Serve) -> None:
    server.curl("GET", "/api/v1/me/balance")
    result = payorch("record", "--base-url", server.url, "--since", "99999999999999d")
    assert result.returncode == 0, result.stderr
    assert "Recorded 1 request as 1 step" in result.stderr


def test_an_output_that_cannot_be_written_is_one_line(server: Serve, tmp_path: Path) -> None:
    server.curl("GET", "/api/v1/me/balance")
    missing = payorch("record", "--base-url", server.url, "-o", str(tmp_path / "no" / "x.yaml"))
    one_line_error(missing, 2)
    assert "no such directory" in missing.stderr
    directory = payorch("record", "--base-url", server.url, "-o", str(tmp_path))
    one_line_error(directory, 2)
    assert "is a directory" in directory.stderr
    full = payorch("record", "--base-url", server.url, "-o", "/dev/full")
    one_line_error(full, 1)
    assert "No space left on device" in full.stderr
    # No half-written file left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "serve.err"]


def journey(server: Serve) -> str:
    """Read the balance, create a payment (PIX), simulate paid, read the balance, advance two
    days, refund part, read the balance."""
    server.curl("GET", "/api/v1/me/balance")
    tx = server.curl(
        "POST",
        "/api/v1/payments",
        {"amount": 100, "paymentMethodId": "sbx_pix", "documentId": "52998224725"},
    )["transactionId"]
    server.curl("POST", f"/api/v1/payments/{tx}/simulate", {"action": "paid"})
    server.curl("GET", "/api/v1/me/balance")
    server.curl("POST", "/_sim/clock/advance", {"seconds": 172800})
    server.curl("POST", f"/api/v1/payments/{tx}/refund", {"amount": 50})
    server.curl("GET", "/api/v1/me/balance")
    return str(tx)


def test_a_recorded_journey_replays_green_twice_on_the_same_server(
    server: Serve, tmp_path: Path
) -> None:
    tx = journey(server)
    path = tmp_path / "journey.yaml"
    recorded = payorch("record", "--base-url", server.url, "-o", str(path))
    assert recorded.returncode == 0, recorded.stderr
    text = path.read_text()
    assert tx not in text  # every id of a path is a saved variable
    assert '"/payments/${tx}/refund"' in text
    # Before the clock moves, the journey's own change; after, the movements of its payment.
    assert '"${first_balance.balance.pending + 95.2}"' in text
    assert "$contains" in text
    for attempt in (1, 2):
        replay = payorch("scenario", "run", str(path), "--base-url", server.url)
        assert replay.returncode == 0, f"replay {attempt}: {replay.stdout}{replay.stderr}"
        assert "1 passed, 0 failed" in replay.stdout


def test_an_id_created_outside_the_recording_is_a_flagged_var(
    server: Serve, tmp_path: Path
) -> None:
    tx = journey(server)
    server.curl("GET", f"/api/v1/payments/{tx}")
    path = tmp_path / "last.yaml"
    recorded = payorch("record", "--base-url", server.url, "--last", "1", "-o", str(path))
    assert recorded.returncode == 0, recorded.stderr
    assert "1 id not created in the recording (vars flagged UNLINKED in the file)" in (
        recorded.stderr
    )
    text = path.read_text()
    document = yaml.safe_load(text)
    assert document["vars"] == {"tx": tx}
    assert document["steps"][0]["request"]["path"] == "/payments/${tx}"
    assert f"# UNLINKED: {tx} was not created in this recording; it is vars.tx" in text
    replay = payorch("scenario", "run", str(path), "--base-url", server.url)
    assert replay.returncode == 0, replay.stdout + replay.stderr
