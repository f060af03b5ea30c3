"""A poll is compared at its last read: a scenario step's `retry` marks its attempts from the
second on (X-Payorch-Poll), and drift leaves out a read that the next attempt repeats, since it
saw the upstream mid-way. Reads in a row without the mark are all compared."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from payorch_cli.scenario.host import host
from tests.drift.conftest import PAYORCH, report
from tests.drift.shim import Loop, RecordingShim

POLL = """\
scenario: a poll that never settles
steps:
  - create_payment: {amount: 10, paymentMethodId: "1001"}
    save: {tx: transactionId}
  - request: {method: GET, path: "/payments/${tx}"}
    retry: {attempts: 3, interval: 10ms}
    expect: {json: {status: completed}}
"""


def _recorded_poll(loop: Loop, tmp_path: Path) -> Path:
    scenario = tmp_path / "poll.yaml"
    scenario.write_text(POLL)
    upstream = host().start()
    shim = RecordingShim(loop, upstream.base_url, tmp_path / "rec.jsonl")
    try:
        run = subprocess.run(
            [*PAYORCH, "scenario", "run", str(scenario), "--base-url", shim.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 1, run.stdout[-2000:]  # the poll never sees `completed`
        assert "still failing after 3 attempts" in run.stdout
    finally:
        shim.close()
        upstream.stop()
    (recording,) = [t.path for t in shim.tracks.values() if t.exchanges]
    return recording


def _reads(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        r
        for r in lines
        if r.get("kind") == "exchange"
        and r["request"]["method"] == "GET"
        and "/payments/" in r["request"]["path"]
    ]


def _rewrite(recording: Path, change: Any) -> Path:
    """The recording with `change` applied to its three reads of the payment."""
    header, *lines = recording.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    change(_reads(records))
    out = recording.with_name("changed.jsonl")
    out.write_text("\n".join([header, *(json.dumps(r) for r in records)]) + "\n")
    return out


def test_a_poll_is_compared_at_its_last_read(loop: Loop, tmp_path: Path) -> None:
    recording = _recorded_poll(loop, tmp_path)
    reads = _reads([json.loads(line) for line in recording.read_text().splitlines()[1:]])
    assert [r["request"]["headers"].get("x-payorch-poll") for r in reads] == [None, "2", "3"]
    status, doc = report(recording)
    assert (status, doc["parity"], doc["differences"], doc["polled"]) == (0, 1.0, [], 2)

    def mid_way(reads: list[dict[str, Any]]) -> None:
        # What an upstream still settling answers to the early attempts.
        for read in reads[:2]:
            read["response"]["body"]["status"] = "processing"

    status, doc = report(_rewrite(recording, mid_way))
    assert (status, doc["parity"], doc["differences"], doc["polled"]) == (0, 1.0, [], 2)

    def unmarked(reads: list[dict[str, Any]]) -> None:
        mid_way(reads)
        for read in reads:
            read["request"]["headers"].pop("x-payorch-poll", None)

    status, doc = report(_rewrite(recording, unmarked))
    assert status == 1 and doc["polled"] == 0
    differing = {d["seq"] for d in doc["differences"]}
    assert differing == {r["seq"] for r in reads[:2]}, doc["differences"]
