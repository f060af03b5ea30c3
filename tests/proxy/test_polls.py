"""A poll in the scenario `payorch proxy` writes: a scenario step's `retry` went through the
proxy as several reads (attempts 2.. marked X-Payorch-Poll); the written scenario has one step
for them, expecting the last answer, with a `retry` of its own, and it replays green."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from tests.drift.test_polls import POLL
from tests.proxy.conftest import Running, serve
from tests.proxy.test_scenarios import scenario_run


def test_a_poll_is_one_step_with_a_retry_in_the_written_scenario(
    proxied: Callable[..., Running], tmp_path: Path, processes: list[Running]
) -> None:
    proxy = proxied()
    scenario = tmp_path / "poll.yaml"
    scenario.write_text(POLL)
    done = scenario_run(str(scenario), "--base-url", proxy.url)
    assert done.returncode == 1 and "still failing after 3 attempts" in done.stdout, done.stdout
    assert proxy.stop() == 0
    written = tmp_path / "rec" / "scenario.yaml"
    steps = yaml.safe_load(written.read_text())["steps"]
    reads = [s for s in steps if s.get("request", {}).get("method") == "GET"]
    assert len(reads) == 1, steps
    (read,) = reads
    assert read["retry"]["attempts"] == 6
    assert read["retry"]["interval"].endswith("ms") and int(read["retry"]["interval"][:-2]) >= 10
    assert read["expect"]["json"]["status"] == "pending"  # the last answer the upstream gave
    fresh = serve(tmp_path, "fresh")
    processes.append(fresh)
    replay = scenario_run(str(written), "--base-url", fresh.url)
    assert replay.returncode == 0, replay.stdout[-4000:] + replay.stderr
