"""GET /me/balance latency on an empty store, then with 1,000 and 20,000 completed payments.

Starts its own `payorch serve` on a free port with a fresh data dir (--no-rate-limit). Each stage
creates payments with `Sandbox-Simulate: paid` over HTTP (8 in flight), then advances the clock by
63 days (POST /_sim/clock/advance) so that every payment is paid, settled (T+2) and its rolling
reserve released (60 days after settling): the merchant's movements land and the balance shows
the same things at every stage (its buckets, its fee summary, the 100 latest movements, an empty
reserve schedule); only the history behind it grows (7 movements per payment). A stage with 25
payments is measured too: the first with a full movements list, so the rendered response is as
large as later ones.

Sequential GETs over one keep-alive connection (http.client); prints min/median/max in ms and each
stage's median over the empty store's and over the 25-payment stage's.

    python bench/balance.py [--stored 1000,20000] [--samples 500]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from _common import AUTH, BODY, call, serve_cmd, start, stop

ADVANCE = 63 * 86_400  # past the settlement (T+2) and the reserve's release 60 days later
CONCURRENCY = 8


async def fill(port: int, count: int) -> None:
    """`count` payments simulated paid, then the clock moved past their settlement and reserve."""
    base = f"http://127.0.0.1:{port}"
    headers = {**AUTH, "Sandbox-Simulate": "paid"}
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        todo = iter(range(count))

        async def worker() -> None:
            for _ in todo:
                async with session.post(
                    f"{base}/api/v1/payments", json=BODY, headers=headers
                ) as response:
                    assert response.status == 200, await response.text()
                    await response.read()

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    status, data = call(port, "POST", "/_sim/clock/advance", {"seconds": ADVANCE})
    assert status == 200, data


def timed_gets(port: int, count: int) -> tuple[list[float], dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    samples = []
    body = b""
    for _ in range(count):
        began = time.perf_counter()
        conn.request("GET", "/api/v1/me/balance", headers=AUTH)
        response = conn.getresponse()
        body = response.read()
        samples.append((time.perf_counter() - began) * 1000)
        assert response.status == 200, response.status
    conn.close()
    return samples, json.loads(body)


def measure(port: int, label: str, samples: int) -> float:
    timed_gets(port, 50)  # warm-up
    got, body = timed_gets(port, samples)
    ordered = sorted(got)
    median = statistics.median(ordered)
    balance = body["balance"]
    print(
        f"{label:<34} min {ordered[0]:7.2f}  median {median:7.2f}  max {ordered[-1]:8.2f} ms"
        f"   (available {balance['available']}, pending {balance['pending']}, "
        f"{len(body['movements'])} movements, {len(body['reserveSchedule'])} scheduled)",
        flush=True,
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stored", default="1000,20000", help="completed payments per stage")
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args()
    stages = [25, *(int(n) for n in args.stored.split(","))]
    with tempfile.TemporaryDirectory() as tmp:
        server, port, _ = start(serve_cmd(Path(tmp) / "data"))
        try:
            empty = measure(port, "GET /me/balance, empty store", args.samples)
            stored, first = 0, 0.0
            for target in stages:
                began = time.perf_counter()
                asyncio.run(fill(port, target - stored))
                print(
                    f"  (+{target - stored} paid payments, settled, in "
                    f"{time.perf_counter() - began:.1f} s)",
                    flush=True,
                )
                stored = target
                median = measure(port, f"GET /me/balance, {stored} completed", args.samples)
                first = first or median
                print(
                    f"  median ratio to the empty store: {median / empty:.2f}, "
                    f"to {stages[0]} completed (the same response size): {median / first:.2f}",
                    flush=True,
                )
        finally:
            stop(server)


if __name__ == "__main__":
    main()
