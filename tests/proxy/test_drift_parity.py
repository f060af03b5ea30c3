"""The two halves of issue 35 together: traffic recorded by the real `payorch proxy` in front of
a payorch upstream, then `payorch drift` on that recording. Against the same payorch as upstream,
every scenario of scenarios/ (the isolated ones each in a namespace of their own, the trace,
reconciliation and webhook-retries ones included) gives parity 1.0 with no difference.

What made those three differ, and is now replayed rather than left out (docs/decisions.md, "Drift
through the proxy: every scenario"): deliveries to the scenario runner's own receiver, which the
proxy never sees, are answered by drift's receiver with the statuses the recording's reads show
(the retries scenario's 503), and each request waits for payorch's deliveries in flight, as the
runner waited for its events.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.proxy.conftest import PAYORCH, Running
from tests.proxy.test_scenarios import SCENARIOS, scenario_run


@pytest.mark.long(12)
def test_every_scenario_recorded_by_the_proxy_drifts_at_parity_one(
    proxied: Callable[..., Running], tmp_path: Path
) -> None:
    proxy = proxied()
    done = scenario_run(str(SCENARIOS), "--base-url", proxy.url, "--namespace", "auto")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert " 0 failed" in summary and "skipped" not in summary, summary
    assert proxy.stop() == 0
    recording = tmp_path / "rec" / "exchanges.jsonl"
    text = recording.read_text()
    for kind in ("/trace", "/_sim/clock/advance", "/deliveries/"):  # the three kinds are in
        assert kind in text, kind
    drift = subprocess.run(
        [*PAYORCH, "drift", str(recording), "--json"], capture_output=True, text=True, timeout=900
    )
    report = json.loads(drift.stdout) if drift.stdout.strip() else {}
    assert drift.returncode == 0, (drift.stderr, report.get("differences", [])[:10])
    assert report["parity"] == 1.0 and report["differences"] == [], report.get("differences")
    assert report["skipped"] == 0
    assert report["compared"] > 500


def test_an_endpoint_that_failed_upstream_fails_in_the_replay_too(
    proxied: Callable[..., Running], tmp_path: Path
) -> None:
    """The retries scenario's receiver answers 503, then 200: the proxy never sees it, but the
    delivery lists it read back do, and drift's receiver answers the same, so the replay's
    attempts (503 then the retry's 200, then the replay's) are the upstream's."""
    proxy = proxied()
    scenario = SCENARIOS / "webhook_retries_replay.yaml"
    done = scenario_run(str(scenario), "--base-url", proxy.url)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert proxy.stop() == 0
    recording = tmp_path / "rec" / "exchanges.jsonl"
    assert '"httpStatus":503' in recording.read_text()
    drift = subprocess.run(
        [*PAYORCH, "drift", str(recording), "--json"], capture_output=True, text=True, timeout=300
    )
    report = json.loads(drift.stdout)
    assert (drift.returncode, report["differences"]) == (0, []), (
        drift.stderr,
        report["differences"],
    )
    assert report["compared"] >= 8 and report["parity"] == 1.0
