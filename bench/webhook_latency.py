"""Webhook delivery latency: from the moment an event is emitted to the moment the endpoint has it.

Runs the real app (create_app on a fresh data dir, served on a free port) and a bare aiohttp
endpoint in this process. A bus listener stamps each event when it is emitted; the endpoint stamps
it when the request arrives (both time.perf_counter). Two loads:

- sequential: a payment is created and simulated `paid` over HTTP (2 events: payment.completed and
  payment.captured), and both deliveries are awaited before the next payment;
- burst: N events emitted in one state change, all in flight at once.

    python bench/webhook_latency.py [--events 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from simulator.app import create_app
from simulator.http.handlers.webhooks import ENGINE
from simulator.http.keys import BUS, STORE
from simulator.settings import Settings

KEY = "sk_test_19g744zrbw5buqxqpxp5w4gj"
AUTH = {"Authorization": f"Bearer {KEY}"}


class Stamps:
    def __init__(self) -> None:
        self.emitted: dict[str, float] = {}
        self.arrived: dict[str, float] = {}
        self.changed = asyncio.Event()

    def on_event(self, event: dict[str, Any]) -> None:
        self.emitted[event["id"]] = time.perf_counter()

    async def endpoint(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.arrived[json.loads(body)["id"]] = time.perf_counter()
        self.changed.set()
        return web.Response(text="ok")

    async def wait(self, count: int) -> None:
        while len(self.arrived) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 10)

    def latencies_ms(self, ids: list[str]) -> list[float]:
        return [(self.arrived[i] - self.emitted[i]) * 1000 for i in ids]


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{name:<11} n={len(samples):<4} min {ordered[0]:6.2f}  median "
        f"{statistics.median(ordered):6.2f}  p99 {p99:6.2f}  max {ordered[-1]:6.2f} ms"
    )


async def main(events: int) -> None:
    stamps = Stamps()
    endpoint_app = web.Application()
    endpoint_app.router.add_post("/hooks", stamps.endpoint)
    endpoint_runner, endpoint_url = await serve(endpoint_app)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Settings(data_dir=Path(tmp) / "data", rate_limit=False))
        app[BUS].subscribe(stamps.on_event)
        runner, base = await serve(app)
        try:
            async with aiohttp.ClientSession(base, headers=AUTH) as http:
                response = await http.post(
                    "/api/v1/webhooks", json={"url": endpoint_url + "/hooks", "events": "*"}
                )
                assert response.status == 201, await response.text()
                for n in range(events // 2):
                    created = await (
                        await http.post(
                            "/api/v1/payments", json={"amount": 10, "paymentMethodId": "1001"}
                        )
                    ).json()
                    await http.post(
                        f"/api/v1/payments/{created['transactionId']}/simulate",
                        json={"action": "paid"},
                    )
                    await stamps.wait(2 * (n + 1))
            sequential = list(stamps.arrived)
            with app[STORE].batch():
                for n in range(events):
                    app[BUS].emit("mer_mercadoazul", "sandbox", "claim.opened", {"id": f"B{n}"})
            await stamps.wait(len(sequential) + events)
            await app[ENGINE].drain()
            burst = [i for i in stamps.arrived if i not in set(sequential)]
            print(summary("sequential", stamps.latencies_ms(sequential)))
            print(summary("burst", stamps.latencies_ms(burst)))
        finally:
            await runner.cleanup()
            await endpoint_runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    asyncio.run(main(parser.parse_args().events))
