"""Saved states: how long `POST /_sim/state` (save) and `POST /_sim/state/{name}/restore` take
with 1,000 transactions stored (issue 16's target: a restore under 100 ms).

Starts its own `payorch serve` on a free port with a fresh data dir (--no-rate-limit), creates
the payments over HTTP (8 in flight): 70 % with `Sandbox-Simulate: paid`, the rest left pending;
advances the clock 3 days (the paid ones settle: movements, settlements, events, webhook-free),
refunds one in ten of the paid ones, then saves the state once per round and restores it
`--restores` times. Times are client-side round trips over one keep-alive connection (the
request's own work: wait for in-flight requests, store rewrite with fsync, rebuild of every
service and index).

    python bench/restore.py [--transactions 1000] [--restores 30]
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

CONCURRENCY = 8
SETTLE = 3 * 86_400


async def fill(port: int, count: int) -> list[str]:
    """`count` payments, 70 % paid; the ids of the paid ones."""
    base = f"http://127.0.0.1:{port}"
    paid: list[str] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session:
        todo = iter(range(count))

        async def worker() -> None:
            for n in todo:
                headers = {**AUTH, "Sandbox-Simulate": "paid"} if n % 10 < 7 else AUTH
                async with session.post(
                    f"{base}/api/v1/payments", json=BODY, headers=headers
                ) as response:
                    body = await response.json()
                    assert response.status == 200, body
                    if n % 10 < 7:
                        paid.append(body["transactionId"])

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return paid


def timed(conn: http.client.HTTPConnection, method: str, path: str, body: object = None) -> float:
    began = time.perf_counter()
    conn.request(method, path, json.dumps(body) if body is not None else None, AUTH)
    response = conn.getresponse()
    data = response.read()
    elapsed = (time.perf_counter() - began) * 1000
    assert 200 <= response.status < 300, (response.status, data[:300])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transactions", type=int, default=1000)
    parser.add_argument("--restores", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server, port, _ = start(serve_cmd(Path(tmp) / "data"))
        try:
            began = time.perf_counter()
            paid = asyncio.run(fill(port, args.transactions))
            status, _ = call(port, "POST", "/_sim/clock/advance", {"seconds": SETTLE})
            assert status == 200
            for tx_id in paid[::10]:
                status, raw = call(port, "POST", f"/api/v1/payments/{tx_id}/refund", {"amount": 10})
                assert status == 200, raw[:300]
            print(
                f"filled {args.transactions} transactions ({len(paid)} paid and settled, "
                f"{len(paid[::10])} refunded) in {time.perf_counter() - began:.1f} s",
                flush=True,
            )
            conn = http.client.HTTPConnection("127.0.0.1", port)
            saves = [
                timed(conn, "POST", "/_sim/state", {"name": "bench", "overwrite": True})
                for _ in range(5)
            ]
            conn.request("GET", "/_sim/state", headers=AUTH)
            listed = json.loads(conn.getresponse().read())["data"][0]
            restores = sorted(
                timed(conn, "POST", "/_sim/state/bench/restore") for _ in range(args.restores)
            )
            conn.close()
            p95 = restores[min(len(restores) - 1, round(0.95 * (len(restores) - 1)))]
            print(
                f"state: {listed['transactions']} transactions, "
                f"{listed['sizeBytes'] / 1e6:.2f} MB on disk",
                flush=True,
            )
            print(f"save     median {statistics.median(saves):7.1f} ms  (5 saves)", flush=True)
            print(
                f"restore  median {statistics.median(restores):7.1f} ms  p95 {p95:7.1f} ms  "
                f"min {restores[0]:7.1f}  max {restores[-1]:7.1f}  ({len(restores)} restores)",
                flush=True,
            )
        finally:
            stop(server)


if __name__ == "__main__":
    main()
