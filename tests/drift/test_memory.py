"""A long recording is compared in bounded memory: the replay streams it, keeping only the id
map, so ten times the exchanges costs about the same peak memory (the full-size figure, for
100,000 exchanges, is in docs/decisions.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.drift.conftest import PAYORCH, World, call
from tests.drift.generate import generate
from tests.drift.shim import Loop, RecordingShim


def _template(loop: Loop, world: World, out: Path) -> None:
    shim = RecordingShim(loop, world.base, out)
    try:
        sk, api = world.key(), f"{shim.url}/api/v1"
        tx = call(f"{api}/payments", "POST", sk, {"amount": 10, "paymentMethodId": "1001"})
        call(f"{api}/payments/{tx['transactionId']}", "GET", sk)
        call(f"{api}/payments/{tx['transactionId']}/simulate", "POST", sk, {"action": "paid"})
    finally:
        shim.close()


def _peak_rss_mb(*args: str) -> tuple[float, dict]:
    proc = subprocess.Popen(
        [*PAYORCH, "drift", *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stdout = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read() if proc.stderr else ""
    return usage.ru_maxrss / 1024, json.loads(stdout)


def test_ten_times_the_exchanges_in_about_the_same_memory(
    loop: Loop, world: World, upstream: str, tmp_path: Path
):
    template = tmp_path / "template.jsonl"
    _template(loop, world, template)
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    generate(template, small, 300)
    generate(template, large, 3000)
    small_mb, small_doc = _peak_rss_mb(str(small), "--base-url", upstream)
    large_mb, large_doc = _peak_rss_mb(str(large), "--base-url", upstream)
    assert (small_doc["compared"], large_doc["compared"]) == (300, 3000)
    assert (small_doc["parity"], large_doc["parity"]) == (1.0, 1.0), large_doc["differences"][:3]
    assert large_mb - small_mb < 8, (small_mb, large_mb)
