"""The two halves of issue 35 together: traffic recorded by the real `payorch proxy` in front of a
payorch upstream, then `payorch drift` on that recording. Against the same payorch as upstream,
the parity is 1.0 with no difference.

Left out (docs/decisions.md, "drift through the proxy"): the scenarios whose reads list the
deliveries to the scenario runner's own receiver (trace, reconciliation) and the one whose
receiver answers 503 on purpose (webhook retries): the proxy never sees that receiver, so drift
replays its deliveries to a receiver of its own that answers 200, and the attempt counts differ.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.proxy.conftest import PAYORCH, Running
from tests.proxy.test_scenarios import SCENARIOS, scenario_run

COMPARABLE = "not trace and not reconciliation and not retries"


def test_the_scenarios_recorded_by_the_proxy_drift_at_parity_one(
    proxied: Callable[..., Running], tmp_path: Path
) -> None:
    proxy = proxied()
    done = scenario_run(str(SCENARIOS), "--base-url", proxy.url, "-k", COMPARABLE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert proxy.stop() == 0
    recording = tmp_path / "rec" / "exchanges.jsonl"
    drift = subprocess.run(
        [*PAYORCH, "drift", str(recording), "--json"], capture_output=True, text=True, timeout=900
    )
    report = json.loads(drift.stdout) if drift.stdout.strip() else {}
    assert drift.returncode == 0, (drift.stderr, report.get("differences", [])[:10])
    assert report["parity"] == 1.0 and report["differences"] == [], report.get("differences")
    assert report["compared"] > 100
