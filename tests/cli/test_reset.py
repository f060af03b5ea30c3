"""`payorch reset` as a user runs it, and a reset cut short by `kill -9`: a real server, killed at
a random instant after the reset was sent, restarted on the same data dir, holds the old state or
the new one, never a mix. Each round's old state is a snapshot plus journal lines (the window
where the new snapshot is in place and the old journal not yet emptied is the one the snapshot's
journal mark covers; tests/unit/test_store.py cuts a reset exactly there).

Rounds: 6, or PAYORCH_RESET_CRASH_ROUNDS; the kill instants come from PAYORCH_RESET_CRASH_SEED
(random by default, printed with the outcome: run with -s to see them).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from payorch_cli.client import Client
from tests.cli.test_serve import PAYORCH, SANDBOX_SK, Server

ROUNDS = int(os.environ.get("PAYORCH_RESET_CRASH_ROUNDS", "6"))
SEED = int(os.environ.get("PAYORCH_RESET_CRASH_SEED", str(random.randrange(2**32))))
OLD_PAYMENTS = 150
JOURNALED = 20  # payments made in each round before its reset: lines in the journal
KILL_WINDOW = (0.0, 0.004)  # after the request is sent; a reset here takes about 2 ms


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PAYORCH, *args], capture_output=True, text=True, timeout=30)


def test_payorch_reset(server: Server) -> None:
    client = Client(server.url)
    tx = client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
    client.post("/_sim/clock/advance", {"seconds": 7200})
    done = run("reset", "--base-url", server.url)
    assert done.returncode == 0, done.stderr
    # Wrapped at words where 80 columns cannot hold it: the URL and the time stay whole.
    said = " ".join(done.stdout.split())
    assert said.startswith(f"Reset {server.url}: back to its fixtures, clock ")
    assert all(len(line) <= 80 for line in done.stdout.splitlines())
    assert client.get("/_sim/clock")["offsetSeconds"] == 0
    status, _ = server.call("GET", f"/api/v1/payments/{tx['transactionId']}")
    assert status == 404
    live = run("reset", "--base-url", server.url, "--api-key", "sk_live_lvuyxno67qob31r1gq32rfwr")
    assert live.returncode == 1 and "production_key_refused" in live.stderr
    as_json = run("--json", "reset", "--base-url", server.url)
    assert as_json.returncode == 0 and '"reset": true' in as_json.stdout


def _state(url: str) -> tuple[int, int, float]:
    """(payments, webhook subscriptions, clock offset) as the server answers them."""
    client = Client(url)
    try:
        payments = client.get("/payments", limit=1)["pagination"]["total"]
        hooks = client.get("/webhooks", limit=1)["pagination"]["total"]
        return payments, hooks, client.get("/_sim/clock")["offsetSeconds"]
    finally:
        client.close()


def _send_reset(url: str) -> socket.socket:
    """POST /_sim/reset on a raw socket: sent when this returns, the answer never read."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall(
        b"POST /_sim/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
        b"Authorization: Bearer " + SANDBOX_SK.encode() + b"\r\n\r\n"
    )
    return sock


@pytest.mark.long(18)
def test_a_reset_killed_at_any_instant_leaves_the_old_state_or_the_new(tmp_path: Path) -> None:
    # The old world: payments (with their events, movements and jobs), a subscription, time
    # moved on; stopped cleanly, kept as the template each round starts from.
    template = tmp_path / "template"
    first = Server(template)
    client = Client(first.url)
    for n in range(OLD_PAYMENTS):
        client.post("/payments", {"amount": 10 + n, "paymentMethodId": "1001"})
    client.post("/webhooks", {"events": "*"})
    client.post("/_sim/clock/advance", {"seconds": 86_400})
    client.close()
    old = _state(first.url)
    assert first.stop() == 0
    new = (0, 0, 0.0)

    rng = random.Random(SEED)
    seen: Counter[str] = Counter()
    for round_no in range(ROUNDS):
        data = tmp_path / f"round-{round_no}"
        shutil.copytree(template, data)
        server = Server(data)
        # Writes since the template's snapshot: the journal holds them when the reset comes.
        client = Client(server.url)
        for n in range(JOURNALED):
            client.post("/payments", {"amount": 500 + n, "paymentMethodId": "1001"})
        client.close()
        delay = rng.uniform(*KILL_WINDOW)
        sock = _send_reset(server.url)
        time.sleep(delay)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=10)
        sock.close()
        # Killed after the new snapshot was in place and before the old journal was emptied:
        # the window the snapshot's journal mark is for.
        between = (
            (data / "snapshot.json").stat().st_size < 1024 < (data / "journal.log").stat().st_size
        )
        again = Server(data)  # the store opens: not corrupt
        try:
            state = _state(again.url)
            offset = state[2]
            if state[:2] == (old[0] + JOURNALED, old[1]):
                assert offset >= old[2], (round_no, delay, state)
                seen["old"] += 1
            else:
                assert state == new, (round_no, delay, state, old)
                seen["new, killed between snapshot and journal" if between else "new"] += 1
        finally:
            again.stop()
    print(f"reset crash: seed {SEED}, {ROUNDS} rounds: {dict(seen)}")
    assert sum(seen.values()) == ROUNDS
