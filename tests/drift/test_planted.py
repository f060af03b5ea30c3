"""`payorch drift` against a recording of a real upstream payorch: a clean recording replays
at parity 1.0 with no difference; with 20 planted differences of different kinds in front of
the upstream, every one is reported and nothing else is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drift import journey
from tests.drift.conftest import World, drift, report
from tests.drift.shim import Loop, Planter, RecordingShim


def record(loop: Loop, world: World, out: Path, *, plant: bool) -> dict[str, int]:
    """Drive the journey through the shim (and the planter), and the seq of each step."""
    upstream, planter = world.base, None
    if plant:
        answers = {step: change for step, (_, change) in journey.ANSWER_PLANTS.items()}
        planter = Planter(loop, world.base, answers, journey.plant_webhooks)
        upstream = planter.url
    shim = RecordingShim(loop, upstream, out)
    try:
        journey.run(shim.url, world)
        shim.wait_webhooks(journey.WEBHOOK_COUNT - (1 if plant else 0))
    finally:
        shim.close()
        if planter is not None:
            planter.close()
    steps = {}
    for line in out.read_text().splitlines()[1:]:
        doc = json.loads(line)
        if doc["kind"] == "exchange":
            steps[doc["request"]["headers"]["x-drift-step"]] = doc["seq"]
    return steps


def test_a_clean_recording_replays_at_parity_one(loop: Loop, world: World, tmp_path: Path):
    out = tmp_path / "clean.jsonl"
    record(loop, world, out, plant=False)
    status, doc = report(out)
    assert doc["differences"] == []
    assert (status, doc["parity"], doc["compared"]) == (0, 1.0, 31)


def test_the_replay_runs_on_a_server_in_a_namespace_it_deletes(
    loop: Loop, world: World, upstream: str, tmp_path: Path
):
    out = tmp_path / "clean.jsonl"
    record(loop, world, out, plant=False)
    status, doc = report(out, "--base-url", upstream)
    assert (status, doc["parity"], doc["differences"]) == (0, 1.0, [])
    assert doc["target"] == upstream
    from payorch_cli.client import DEFAULT_API_KEY
    from tests.drift.conftest import call

    listed = call(f"{upstream}/_sim/namespaces", "GET", DEFAULT_API_KEY)
    assert not [n for n in listed["data"] if n["name"].startswith("drift-")]


def _explained(difference: dict[str, Any], planted_seqs: set[int]) -> bool:
    if difference["where"].startswith("webhook "):
        kind = difference["where"].split()[1]
        return kind in journey.WEBHOOK_PLANTS or kind == "payment.completed"
    return difference["seq"] in planted_seqs


def test_twenty_planted_differences_are_all_found_and_nothing_else(
    loop: Loop, world: World, tmp_path: Path
):
    out = tmp_path / "planted.jsonl"
    steps = record(loop, world, out, plant=True)
    status, doc = report(out, "--min-parity", "0.5")
    assert status == 1  # 20 differences in 30 records: below 0.5
    planted = {steps[step]: kind for step, (kind, _) in journey.ANSWER_PLANTS.items()}
    assert len(planted) + len(journey.WEBHOOK_PLANTS) == 20
    found_seqs = {d["seq"] for d in doc["differences"] if not d["where"].startswith("webhook")}
    found_hooks = {
        d["where"].split()[1] for d in doc["differences"] if d["where"][:8] == "webhook "
    }
    missed = [kind for seq, kind in planted.items() if seq not in found_seqs]
    missed += [kind for hook, kind in journey.WEBHOOK_PLANTS.items() if hook not in found_hooks]
    false = [d for d in doc["differences"] if not _explained(d, set(planted))]
    assert (missed, false) == ([], []), doc["differences"]
    assert all(d["fix"] == "payorch" for d in doc["differences"])
    assert doc["matched"] == doc["compared"] - 20


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_the_report_fits_80_columns_and_the_html_is_one_file(
    loop: Loop, world: World, tmp_path: Path, fmt: str
):
    out = tmp_path / "planted.jsonl"
    steps = record(loop, world, out, plant=True)
    page = tmp_path / "report.html"
    done = drift("planted.jsonl", "--min-parity", "0", "--html", str(page), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if fmt == "text":
        lines = done.stdout.splitlines()
        assert max(map(len, lines)) <= 80
        assert "amount_not_va" in done.stdout and lines[-1].startswith("parity 0.3")
        seq = steps["token"]
        assert f"payorch drift planted.jsonl --exchange {seq} > drift-{seq}.jsonl" in lines
    else:
        html = page.read_text()
        assert html.startswith("<!doctype html>") and "<script" not in html
        assert "refund_window_closed" in html and "src=" not in html


def test_the_attach_command_extracts_one_redacted_replayable_exchange(
    loop: Loop, world: World, tmp_path: Path
):
    out = tmp_path / "planted.jsonl"
    steps = record(loop, world, out, plant=True)
    seq = steps["zero"]
    done = drift(str(out), "--exchange", str(seq))
    assert done.returncode == 0, done.stderr
    header, exchange = map(json.loads, done.stdout.splitlines())
    assert header["format"] == "payorch-recording" and exchange["seq"] == seq
    assert "sk_test_REDACTED_" in exchange["request"]["headers"]["authorization"]
    one = tmp_path / "one.jsonl"
    one.write_text(done.stdout)
    _, doc = report(one, "--min-parity", "0")
    assert [d["field"] for d in doc["differences"]] == ["error.code"]
