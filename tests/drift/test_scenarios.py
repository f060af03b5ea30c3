"""Scenarios of scenarios/ driven through the recording shim against a real upstream payorch
replay at parity 1.0 with no difference (a few here; all of them were measured once, see
docs/decisions.md)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from payorch_cli.scenario.host import host
from tests.drift.conftest import PAYORCH, drift
from tests.drift.shim import Loop, RecordingShim

SCENARIOS = Path(__file__).parents[2] / "scenarios"


@pytest.mark.parametrize(
    "name", ["acting_as_others.yaml", "chargeback_claim.yaml", "fx_presentment.yaml"]
)
def test_a_scenario_through_the_recorder_replays_at_parity_one(
    loop: Loop, tmp_path: Path, name: str
):
    upstream = host().start()  # a payorch of its own, as the upstream
    shim = RecordingShim(loop, upstream.base_url, tmp_path / "rec.jsonl")
    try:
        run = subprocess.run(
            [
                *PAYORCH,
                "scenario",
                "run",
                str(SCENARIOS / name),
                "--base-url",
                shim.url,
                "--namespace",
                "auto",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stdout[-2000:]
        time.sleep(0.5)  # the last deliveries
    finally:
        shim.close()
        upstream.stop()
    recordings = [t.path for t in shim.tracks.values() if t.exchanges]
    assert recordings
    for recording in recordings:
        done = drift(str(recording), "--json")
        doc = json.loads(done.stdout)
        assert (done.returncode, doc["differences"], doc["parity"]) == (0, [], 1.0)
