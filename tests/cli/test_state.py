"""`payorch state save|restore|list|delete` as a user runs them against a real server, and a
restore cut short by `kill -9`: a real server, killed at a random instant after the restore was
sent, restarted on the same data dir, holds the old state or the restored one, never a mix.

Rounds: 6, or PAYORCH_STATE_CRASH_ROUNDS; the kill instants come from PAYORCH_STATE_CRASH_SEED
(random by default, printed with the outcome: run with -s to see them).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from payorch_cli.client import Client
from tests.cli.test_reset import _state, run
from tests.cli.test_serve import SANDBOX_SK, Server

ROUNDS = int(os.environ.get("PAYORCH_STATE_CRASH_ROUNDS", "6"))
SEED = int(os.environ.get("PAYORCH_STATE_CRASH_SEED", str(random.randrange(2**32))))
SAVED_PAYMENTS = 40
LATER_PAYMENTS = 110
JOURNALED = 20  # payments made in each round before its restore: lines in the journal
KILL_WINDOW = (0.0, 0.012)  # after the request is sent; such a restore takes about 10 ms


def test_payorch_state(server: Server) -> None:
    url = ["--base-url", server.url]
    client = Client(server.url)
    kept = client.post("/payments", {"amount": 10, "paymentMethodId": "1001"})
    client.post("/_sim/clock/advance", {"seconds": 7200})
    done = run("state", "save", "ready", *url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Saved ready: 1 transaction, simulated time ")
    again = run("state", "save", "ready", *url)
    assert again.returncode == 1 and "snapshot_exists" in again.stderr
    assert run("state", "save", "ready", "--overwrite", *url).returncode == 0

    gone = client.post("/payments", {"amount": 11, "paymentMethodId": "1001"})
    client.post("/_sim/clock/advance", {"seconds": 86_400})
    done = run("state", "restore", "ready", *url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Restored ready: 1 transactions, clock ")
    assert server.call("GET", f"/api/v1/payments/{kept['transactionId']}")[0] == 200
    assert server.call("GET", f"/api/v1/payments/{gone['transactionId']}")[0] == 404
    assert client.get("/_sim/clock")["offsetSeconds"] == pytest.approx(7200, abs=1)

    listed = run("state", "list", *url)
    assert listed.returncode == 0 and "ready" in listed.stdout, listed.stderr
    as_json = run("--json", "state", "list", *url)
    rows = json.loads(as_json.stdout)["data"]
    assert [row["name"] for row in rows] == ["ready"] and rows[0]["transactions"] == 1

    for args, code in (
        (("restore", "nope"), "snapshot_not_found"),
        (("delete", "nope"), "snapshot_not_found"),
    ):
        failed = run("state", *args, *url)
        assert failed.returncode == 1 and code in failed.stderr, (args, failed.stderr)
    for args in (("restore", "a/b"), ("save", "../up")):  # a bad name: a usage error, nothing sent
        failed = run("state", *args, *url)
        assert failed.returncode == 2 and "not starting with a dot" in failed.stderr, failed.stderr
    live = run("state", "list", *url, "--api-key", "sk_live_lvuyxno67qob31r1gq32rfwr")
    assert live.returncode == 1 and "production_key_refused" in live.stderr

    done = run("state", "delete", "ready", *url)
    assert done.returncode == 0 and done.stdout == "Deleted ready.\n", done.stderr
    empty = run("state", "list", *url)
    assert empty.stdout.startswith("No saved states.")
    client.close()


def _send_restore(url: str, name: str) -> socket.socket:
    """POST /_sim/state/NAME/restore on a raw socket: sent when this returns, never read."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall(
        f"POST /_sim/state/{name}/restore HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
        f"Authorization: Bearer {SANDBOX_SK}\r\n\r\n".encode()
    )
    return sock


@pytest.mark.long(19)
def test_a_restore_killed_at_any_instant_leaves_the_old_state_or_the_restored(
    tmp_path: Path,
) -> None:
    # The saved state: a few payments, time moved on. The old world grows from it: more
    # payments (with their events and jobs), a subscription, more time; stopped cleanly, kept
    # as the template each round starts from.
    template = tmp_path / "template"
    first = Server(template)
    client = Client(first.url)
    for n in range(SAVED_PAYMENTS):
        client.post("/payments", {"amount": 10 + n, "paymentMethodId": "1001"})
    client.post("/_sim/clock/advance", {"seconds": 3600})
    saved = client.save_state("saved")
    new = (SAVED_PAYMENTS, 0, round(saved["offsetSeconds"], 3))
    for n in range(LATER_PAYMENTS):
        client.post("/payments", {"amount": 100 + n, "paymentMethodId": "1001"})
    client.post("/webhooks", {"events": "*"})
    client.post("/_sim/clock/advance", {"seconds": 86_400})
    client.close()
    old = _state(first.url)
    assert first.stop() == 0

    rng = random.Random(SEED)
    seen: Counter[str] = Counter()
    for round_no in range(ROUNDS):
        data = tmp_path / f"round-{round_no}"
        shutil.copytree(template, data)
        server = Server(data)
        client = Client(server.url)
        for n in range(JOURNALED):  # the journal holds writes when the restore comes
            client.post("/payments", {"amount": 500 + n, "paymentMethodId": "1001"})
        client.close()
        delay = rng.uniform(*KILL_WINDOW)
        sock = _send_restore(server.url, "saved")
        time.sleep(delay)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=10)
        sock.close()
        again = Server(data)  # the store opens: not corrupt
        try:
            state = _state(again.url)
            if state[:2] == (old[0] + JOURNALED, old[1]):
                assert state[2] >= old[2], (round_no, delay, state)
                seen["old"] += 1
            else:
                assert state == new, (round_no, delay, state, old)
                seen["restored"] += 1
            # And the saved state itself is intact: it restores.
            assert Client(again.url).restore_state("saved")["transactions"] == SAVED_PAYMENTS
            assert _state(again.url) == new
        finally:
            again.stop()
    print(f"restore crash: seed {SEED}, {ROUNDS} rounds: {dict(seen)}")
    assert sum(seen.values()) == ROUNDS
