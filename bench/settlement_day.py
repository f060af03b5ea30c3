"""10,000 payments paid on one simulated day: journal bytes and seconds per 1,000 payments.

Issue 23 item 6: each paid payment used to rewrite its settlement day's whole record (a list of
every payment settling that day), so the journal grew with the square of the day's volume and
every 1,000 payments took longer than the 1,000 before.

Starts `payorch serve` from a source tree (default: this one; `--tree DIR` for another, e.g. an
old commit checked out with `git worktree add /tmp/before main`; the tree goes first on
PYTHONPATH, as in ab_trees.py) with a fresh data dir and --no-rate-limit, moves the simulated
clock to just after 00:00 UTC, creates the payments (pending, 8 in flight), then pays them one
at a time over one keep-alive connection (`POST /payments/{id}/simulate {"action": "paid"}`):
they all complete on that simulated day, so they all settle on one day. For each 1,000 paid it
prints the wall seconds, the server's CPU seconds (less sensitive to a busy machine) and the
bytes appended to the journal (followed across compactions: the
snapshot's journal mark says which lines of the replaced file the new one starts with), and the
bytes the server wrote to files (`/proc/PID/io` wchar: journal, snapshots, compaction copies).
Then it advances the clock past the day's close (timed), checks that one `settlement.closed`
lists every payment, stops the server (it compacts) and prints the data dir's size.

    python bench/settlement_day.py [--payments 10000] [--step 1000] [--tree DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path

import aiohttp
from _common import AUTH, BODY, ENV, call, cpu_s, serve_cmd, start, stop

CONCURRENCY = 8
DAY = 86_400


class JournalMeter:
    """Bytes appended to `journal.log` since it was made, across the store's compactions.

    A compaction replaces the journal by a new file holding the old one's lines after the
    snapshot's mark: an fd kept open on the old file gives its final size, and the snapshot's
    header the mark, so the copied tail is not counted twice.  Read it after each request (a
    replacement happens during a write, and at most once per request)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "journal.log"
        self._snapshot = data_dir / "snapshot.json"
        self._fd = os.open(self._path, os.O_RDONLY)
        self._inode = os.fstat(self._fd).st_ino
        self._seen = os.fstat(self._fd).st_size
        self.appended = 0
        self.replaced = 0

    def read(self) -> int:
        if os.stat(self._path).st_ino != self._inode:
            final = os.fstat(self._fd).st_size
            self.appended += final - self._seen
            os.close(self._fd)
            self._fd = os.open(self._path, os.O_RDONLY)
            self._inode = os.fstat(self._fd).st_ino
            self._seen = final - self._mark()  # the copied tail, already counted
            self.replaced += 1
        size = os.fstat(self._fd).st_size
        self.appended += size - self._seen
        self._seen = size
        return self.appended

    def _mark(self) -> int:
        with self._snapshot.open("rb") as file:
            head = json.loads(file.readline() + b"}")
        return int(head["#snapshot"]["info"]["journal"]["size"])

    def close(self) -> None:
        os.close(self._fd)


def written_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


async def create(port: int, count: int) -> list[str]:
    base = f"http://127.0.0.1:{port}"
    ids: list[str] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session:
        todo = iter(range(count))

        async def worker() -> None:
            for _ in todo:
                async with session.post(f"{base}/api/v1/payments", json=BODY) as response:
                    body = await response.json()
                    assert response.status == 200, body
                    ids.append(body["transactionId"])

        session.headers.update(AUTH)
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return ids


def post(conn: http.client.HTTPConnection, path: str, body: object) -> dict:
    conn.request("POST", path, json.dumps(body), AUTH)
    response = conn.getresponse()
    data = response.read()
    assert response.status in (200, 201), (path, response.status, data[:300])
    return json.loads(data)


def clock_now(port: int) -> float:
    status, raw = call(port, "GET", "/_sim/clock")
    assert status == 200, raw
    return datetime.fromisoformat(json.loads(raw)["now"].replace("Z", "+00:00")).timestamp()


def settlements_closed(port: int, inbox: str, wait: float = 60.0) -> list[dict]:
    deadline = time.monotonic() + wait
    while True:
        status, raw = call(port, "GET", f"/api/v1/webhooks/{inbox}/deliveries?limit=100")
        assert status == 200, raw
        events = [row["event"] for row in json.loads(raw)["data"]]
        closed = [e for e in events if e["type"] == "settlement.closed"]
        if closed or time.monotonic() > deadline:
            return closed
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payments", type=int, default=10_000)
    parser.add_argument("--step", type=int, default=1_000)
    parser.add_argument("--tree", type=Path, default=None, help="source tree to serve")
    args = parser.parse_args()
    if args.tree is not None:
        # `python -m` looks in the working directory first, then PYTHONPATH: both name the tree.
        ENV["PYTHONPATH"] = str(args.tree.resolve())
        os.chdir(args.tree)
    with tempfile.TemporaryDirectory(prefix="bench-settle-") as tmp:
        data_dir = Path(tmp) / "data"
        proc, port, _ = start(serve_cmd(data_dir))
        try:
            run(port, proc.pid, data_dir, args.payments, args.step)
        finally:
            stop(proc)
        size = sum(p.stat().st_size for p in data_dir.iterdir() if p.is_file())
        print(f"data dir after a graceful stop: {size / 1e6:.1f} MB")


def run(port: int, pid: int, data_dir: Path, payments: int, step: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    # Just after 00:00 UTC: every payment below completes on this simulated day.
    now = clock_now(port)
    post(conn, "/_sim/clock/advance", {"seconds": (now // DAY + 1) * DAY + 60 - now})
    inbox = post(conn, "/api/v1/webhooks", {"events": ["settlement.closed"]})["id"]
    began = time.perf_counter()
    ids = asyncio.run(create(port, payments))
    print(f"created {len(ids)} pending payments in {time.perf_counter() - began:.1f} s")

    meter = JournalMeter(data_dir)
    wrote_before = written_bytes(pid)
    print(
        f"{'paid':>7} {'seconds':>8} {'CPU s':>6} {'journal MB':>11} {'bytes/payment':>14}"
        f" {'wrote MB':>9}"
    )
    total_seconds, cpu_before = 0.0, cpu_s(pid)
    for first in range(0, len(ids), step):
        chunk = ids[first : first + step]
        journal_before, wrote, cpu = meter.read(), written_bytes(pid), cpu_s(pid)
        began = time.perf_counter()
        for tx_id in chunk:
            post(conn, f"/api/v1/payments/{tx_id}/simulate", {"action": "paid"})
            meter.read()
        elapsed = time.perf_counter() - began
        total_seconds += elapsed
        journal = meter.read() - journal_before
        wrote, cpu = written_bytes(pid) - wrote, cpu_s(pid) - cpu
        print(
            f"{first + len(chunk):>7} {elapsed:>8.2f} {cpu:>6.2f} {journal / 1e6:>11.2f}"
            f" {journal / len(chunk):>14,.0f} {wrote / 1e6:>9.2f}"
        )
    print(
        f"{'total':>7} {total_seconds:>8.2f} {cpu_s(pid) - cpu_before:>6.2f}"
        f" {meter.appended / 1e6:>11.2f}"
        f" {meter.appended / len(ids):>14,.0f} {(written_bytes(pid) - wrote_before) / 1e6:>9.2f}"
        f"   (journal replaced {meter.replaced} times by compactions)"
    )
    meter.close()

    began = time.perf_counter()
    post(conn, "/_sim/clock/advance", {"seconds": 5 * DAY})
    print(f"POST /_sim/clock/advance 5 days (the day closes): {time.perf_counter() - began:.2f} s")
    closed = settlements_closed(port, inbox)
    counts = [e["data"]["transactionCount"] for e in closed]
    print(f"settlement.closed events: {len(closed)}, transactionCount {counts}")
    assert counts == [len(ids)], counts
    conn.close()


if __name__ == "__main__":
    main()
