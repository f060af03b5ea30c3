"""A worker killed with kill -9 mid-load, and the whole server stopped by a signal: real
processes and real nginx."""

from __future__ import annotations

import http.client
import os
import queue
import signal
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cluster.cluster import DEFAULT_SK, Cluster, Space, call, needs_nginx

pytestmark = needs_nginx
PAYMENT = {"amount": 10, "paymentMethodId": "1001"}
RESTART_DEADLINE_SECONDS = 120.0  # a bound for a stuck test, not a measured expectation


def named_on(cluster: Cluster, worker: int, stem: str) -> str:
    return next(f"{stem}-{i}" for i in range(1000) if cluster.owner(f"{stem}-{i}") == worker)


class Load(threading.Thread):
    """POST /payments in a loop into one namespace: what was acknowledged, and every refusal."""

    def __init__(self, url: str, space: Space) -> None:
        super().__init__(daemon=True)
        self.url, self.space = url, space
        self.acknowledged: list[str] = []
        self.refused: list[tuple[int, dict[str, str], Any]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            response = call(self.url, "POST", "/api/v1/payments", self.space.sk, PAYMENT)
            if response.status == 200:
                self.acknowledged.append(response.json()["transactionId"])
            else:
                self.refused.append((response.status, response.headers, response.json()))


def wait(condition: Any, what: str) -> None:
    deadline = time.monotonic() + RESTART_DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_worker_killed_mid_load_is_restarted_and_loses_nothing(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "data", 2)
    try:
        victim_index = cluster.owner("default") ^ 1  # not default's: the listing stays up
        victim = cluster.create(named_on(cluster, victim_index, "victim"))
        other = cluster.create(named_on(cluster, victim_index ^ 1, "other"))
        loads = [Load(cluster.url, victim), Load(cluster.url, other)]
        for load in loads:
            load.start()
        wait(lambda: all(len(load.acknowledged) >= 5 for load in loads), "load started")
        os.kill(cluster.worker_pids()[victim_index], signal.SIGKILL)
        wait(lambda: loads[0].refused, "a refusal while the worker is down")
        acknowledged_before = len(loads[0].acknowledged)
        wait(lambda: len(loads[0].acknowledged) > acknowledged_before + 5, "the worker is back")
        for load in loads:
            load.stop.set()
            load.join(timeout=30)

        # While it was down its namespace answered 503 in the envelope, with Retry-After.
        for status, headers, body in loads[0].refused:
            assert status == 503, body
            assert headers["retry-after"] == "1"
            assert body["error"]["code"] == "service_unavailable"
            assert body["error"]["requestId"] == headers["x-request-id"]
        # Every other namespace was untouched.
        assert loads[1].refused == []
        # Everything the killed worker acknowledged is there after its restart.
        for tx_id in loads[0].acknowledged:
            response = cluster.call("GET", f"/api/v1/payments/{tx_id}", victim.sk)
            assert response.status == 200, (tx_id, response.body)
        assert any("worker" in line for line in cluster.error_lines("exited (signal SIGKILL)"))
        assert cluster.stop() == 0
    finally:
        cluster.kill()


@pytest.mark.long(10)
def test_sigterm_and_sigint_stop_everything_cleanly(tmp_path: Path) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        cluster = Cluster(tmp_path / f"data-{sig}", 2)
        try:
            workers = cluster.worker_pids()
            assert len(workers) == 2
            space = cluster.create(named_on(cluster, cluster.owner("default") ^ 1, "stop"))
            paid = cluster.call("POST", "/api/v1/payments", space.sk, PAYMENT)
            assert paid.status == 200
            # An open event stream does not hold the stop up: the stop comes once its head is in.
            opened = threading.Event()
            stream = threading.Thread(target=_hold_stream, args=(cluster.url, opened), daemon=True)
            stream.start()
            assert opened.wait(10)
            assert cluster.stop(sig, timeout=10) == 0
            for pid in workers.values():
                assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
            assert call_refused(cluster.url)
        finally:
            cluster.kill()
        # The data survives: a new server on the same data dir reads it.
        again = Cluster(tmp_path / f"data-{sig}", 2)
        try:
            tx_id = paid.json()["transactionId"]
            assert again.call("GET", f"/api/v1/payments/{tx_id}", space.sk).status == 200
        finally:
            again.kill()


def _hold_stream(url: str, opened: threading.Event) -> None:
    """Open the default world's event stream and read it until the server ends it."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request("GET", "/_sim/events", headers={"Authorization": f"Bearer {DEFAULT_SK}"})
        response = connection.getresponse()
        assert response.status == 200
        opened.set()
        while response.read1(4096):
            pass
    except OSError:
        pass  # the stop cut the stream: what the test expects of it
    finally:
        connection.close()


def _zombie(pid: int) -> bool:
    try:
        return " Z " in Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True


def call_refused(url: str) -> bool:
    try:
        call(url, "GET", "/api/v1/ping", timeout=2)
    except OSError:
        return True
    return False


def test_nothing_outlives_a_supervisor_killed_with_kill_9(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "data", 2)
    try:
        workers = cluster.worker_pids()
        assert len(workers) == 2
        cluster.proc.kill()
        cluster.proc.wait(timeout=10)
        wait(
            lambda: all(not Path(f"/proc/{p}").exists() or _zombie(p) for p in workers.values()),
            "the workers end with their supervisor",
        )
        wait(lambda: call_refused(cluster.url), "nginx ends with its supervisor")
    finally:
        cluster.kill()


def test_log_requests_prints_every_workers_requests(tmp_path: Path) -> None:
    """`--log-requests` prints `default`'s request log (as one process does) from every worker:
    the listing reaches the sibling's `default` too."""
    cluster = Cluster(tmp_path / "data", 2, "--log-requests")
    try:
        assert cluster.proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(line) for line in cluster.proc.stdout or ()], daemon=True
        ).start()
        assert cluster.call("GET", "/api/v1/ping", DEFAULT_SK).status == 200
        assert cluster.call("GET", "/_sim/namespaces", DEFAULT_SK).status == 200
        seen: list[str] = []
        while not (
            any(" /ping " in line for line in seen)
            and sum(" /_sim/namespaces " in line for line in seen) == 2
        ):
            seen.append(lines.get(timeout=60))
    finally:
        cluster.kill()
