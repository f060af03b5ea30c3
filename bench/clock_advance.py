"""`POST /_sim/clock/advance` by 30 days with 1,000 pending payments and 10 webhook subscriptions.

Each round starts its own `payorch serve` (fresh data dir, --no-rate-limit, a free port); this
process runs the webhook endpoint (a bare aiohttp app that answers 200 at once and counts what it
receives). The round subscribes 10 webhooks to every event (`*`) at that endpoint, sets up one of
three stores, then times one `POST /_sim/clock/advance` with {"seconds": 2592000}:

- empty: the subscriptions only; no job is due (the baseline);
- pending: --payments pending payments created over HTTP (SPEI and OXXO due in 72 h, card in
  1 h; no outcome scheduled), so each one's deadline job expires it on the way: one
  `payment.failed` event and 10 deliveries per payment (the issue's target, < 2 s);
- settled: the same payments, each simulated `paid` before the advance (their deliveries
  drained first), so the same deadline jobs fall due with nothing to do; what the advance
  still does is the day's settlement (`settlement.closed`, `settlement.pdf_ready`).

Per round: the POST's own latency (request sent -> response read), then, since deliveries are
sent after their state change commits and trail the response, the time to the last delivery
the advance caused (the endpoint going quiet for --quiet s; for `pending` the count is checked
against the server's records: expired payments x subscriptions), and the CPU time the server
and this process (the endpoint) used over that window. Prints min/median/max over --rounds
rounds of each case, a fresh server for every round, and each case's ratio to the baseline.

    python bench/clock_advance.py [--payments 1000] [--webhooks 10] [--rounds 5]
                                  [--profile OUT.txt]   # py-spy raw profile of round 1, pending
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from _common import serve_cmd, start, stop
from aiohttp import web

SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"
AUTH = {"Authorization": f"Bearer {SK}"}
THIRTY_DAYS = 30 * 86_400
METHODS = ("1001", "1002", "1004")  # spei (72 h), oxxo (72 h), card (1 h)
CONCURRENCY = 8  # setup requests in flight
CASES = ("empty", "pending", "settled")


class Receiver:
    """The webhook endpoint: 200 at once; counts deliveries by event type."""

    def __init__(self) -> None:
        self.by_type: Counter[str] = Counter()
        self.total = 0
        self.last_at = 0.0
        self.changed = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.by_type[json.loads(body)["type"]] += 1
        self.total += 1
        self.last_at = time.perf_counter()
        self.changed.set()
        return web.Response(text="ok")

    async def wait_for(self, count: int, timeout: float = 120.0) -> None:
        deadline = time.perf_counter() + timeout
        while self.total < count:
            self.changed.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"received {self.total} of {count} deliveries")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)

    async def wait_quiet(self, quiet: float) -> None:
        """Until nothing has arrived for `quiet` seconds."""
        while True:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), quiet)
            except TimeoutError:
                return


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Round:
    advance_s: float
    delivered_s: float  # from sending the POST to the last delivery it caused
    server_cpu_s: float  # the server's CPU time over that window (plus --quiet)
    endpoint_cpu_s: float  # this process's (the endpoint's), same window
    deliveries: int
    by_type: dict[str, int]


def start_server(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc, port, _ = start(serve_cmd(data_dir))
    return proc, f"http://127.0.0.1:{port}"


async def expect(response: aiohttp.ClientResponse, status: int) -> dict[str, object]:
    body = await response.json()
    assert response.status == status, (response.status, body)
    return body  # type: ignore[no-any-return]  # the server's JSON answer


async def create_payments(http: aiohttp.ClientSession, count: int, *, paid: bool) -> None:
    numbers = iter(range(count))

    async def worker() -> None:
        for n in numbers:
            body = {
                "amount": 50,
                "paymentMethodId": METHODS[n % len(METHODS)],
                "userEmail": "bench@example.com",
            }
            created = await expect(await http.post("/api/v1/payments", json=body), 200)
            if paid:
                path = f"/api/v1/payments/{created['transactionId']}/simulate"
                await expect(await http.post(path, json={"action": "paid"}), 200)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def count_status(http: aiohttp.ClientSession, status: str) -> int:
    page = await expect(await http.get(f"/api/v1/payments?status={status}&limit=1"), 200)
    return int(page["pagination"]["total"])  # type: ignore[index]  # the server's JSON answer


def start_profile(pid: int, out: str) -> subprocess.Popen[bytes] | None:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(py_spy).exists():
        print("py-spy not found: no profile", file=sys.stderr)
        return None
    proc = subprocess.Popen(
        [py_spy, "record", "-p", str(pid), "-f", "raw", "-r", "500", "-o", out, "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(1.0)  # py-spy needs a moment to attach
    return proc


def stop_profile(proc: subprocess.Popen[bytes], out: str) -> None:
    proc.send_signal(2)  # SIGINT: py-spy writes what it has
    _, err = proc.communicate(timeout=30)
    if not Path(out).exists():
        print(f"py-spy failed: {err.decode(errors='replace')[-500:]}", file=sys.stderr)
    else:
        print(f"py-spy profile (advance + deliveries) written to {out}")


async def one_round(
    receiver: Receiver, hook_url: str, case: str, args: argparse.Namespace
) -> Round:
    payments = 0 if case == "empty" else args.payments
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(Path(tmp) / "data")
        try:
            async with aiohttp.ClientSession(base, headers=AUTH) as http:
                for _ in range(args.webhooks):
                    body = {"url": hook_url, "events": ["*"]}
                    await expect(await http.post("/api/v1/webhooks", json=body), 201)
                setup_start = receiver.total
                await create_payments(http, payments, paid=case == "settled")
                if case == "settled":
                    # payment.completed + payment.captured per payment, to every subscription.
                    await receiver.wait_for(setup_start + 2 * payments * args.webhooks)
                await receiver.wait_quiet(args.quiet)
                assert await count_status(http, "pending") == (payments if case == "pending" else 0)
                before, before_types = receiver.total, Counter(receiver.by_type)
                profile = args.profile if case == "pending" and args.profile else None
                profiler = start_profile(proc.pid, profile) if profile else None
                server_before, endpoint_before = cpu_seconds(proc.pid), time.process_time()
                began = receiver.last_at = time.perf_counter()
                await expect(
                    await http.post("/_sim/clock/advance", json={"seconds": THIRTY_DAYS}), 200
                )
                advanced = time.perf_counter()
                if case == "pending":
                    expired = await count_status(http, "expired")
                    assert expired == payments, f"{expired} of {payments} payments expired"
                    await receiver.wait_for(before + expired * args.webhooks)
                await receiver.wait_quiet(args.quiet)
                server_cpu = cpu_seconds(proc.pid) - server_before
                endpoint_cpu = time.process_time() - endpoint_before
                if profiler is not None and profile is not None:
                    stop_profile(profiler, profile)
                if case == "pending":
                    # Nothing beyond the expected deliveries arrived either.
                    assert receiver.total - before == payments * args.webhooks
                return Round(
                    advance_s=advanced - began,
                    delivered_s=max(receiver.last_at, advanced) - began,
                    server_cpu_s=server_cpu,
                    endpoint_cpu_s=endpoint_cpu,
                    deliveries=receiver.total - before,
                    by_type=dict(receiver.by_type - before_types),
                )
        finally:
            stop(proc)


def spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    return (
        f"min {ordered[0] * 1000:7.1f}  median {statistics.median(ordered) * 1000:7.1f}  "
        f"max {ordered[-1] * 1000:7.1f} ms"
    )


async def main(args: argparse.Namespace) -> None:
    receiver = Receiver()
    endpoint = web.Application()
    endpoint.router.add_post("/hooks", receiver.handle)
    runner = web.AppRunner(endpoint, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    hook_url = f"http://127.0.0.1:{port}/hooks"
    results: dict[str, list[Round]] = {case: [] for case in CASES}
    try:
        for n in range(args.rounds):
            for case in CASES:
                r = await one_round(receiver, hook_url, case, args)
                results[case].append(r)
                print(
                    f"round {n + 1} {case:<8} advance {r.advance_s * 1000:7.1f} ms,"
                    f" last delivery {r.delivered_s * 1000:7.1f} ms"
                    f" (CPU server {r.server_cpu_s:.2f} s, endpoint {r.endpoint_cpu_s:.2f} s);"
                    f" {r.deliveries} deliveries {r.by_type}",
                    flush=True,
                )
    finally:
        await runner.cleanup()
    print()
    print(
        f"POST /_sim/clock/advance {{seconds: {THIRTY_DAYS}}} (30 days), {args.webhooks}"
        f" webhooks, {args.payments} payments, {args.rounds} rounds (fresh server each):"
    )
    baseline = statistics.median(r.advance_s for r in results["empty"])
    for case in CASES:
        rounds = results[case]
        median = statistics.median(r.advance_s for r in rounds)
        print(f"  {case:<8} advance        {spread([r.advance_s for r in rounds])}", end="")
        print("  (baseline)" if case == "empty" else f"  ratio {median / baseline:5.1f}")
        if any(r.deliveries for r in rounds):
            print(f"  {case:<8} last delivery  {spread([r.delivered_s for r in rounds])}", end="")
            print(f"  ({rounds[0].deliveries} deliveries: {rounds[0].by_type})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--payments", type=int, default=1000)
    parser.add_argument("--webhooks", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quiet", type=float, default=0.5, help="s without a delivery = done")
    parser.add_argument("--profile", help="write a py-spy raw profile of round 1 (pending) here")
    asyncio.run(main(parser.parse_args()))
