"""Webhook delivery: event emitted -> received by a local endpoint; latency and throughput.

The real app (create_app on a fresh data dir, as `payorch serve` builds it) runs in this process;
the receiving endpoint runs in a child process, as an integrator's service would (it does not
share the engine's core). Every event goes the engine's whole way: bus -> delivery record
(persisted with the state change) -> plan -> sign -> POST through the engine's own aiohttp
session -> attempt recorded. The endpoint verifies every signature (payorch.webhooks.verify) and
stamps the arrival; this process stamps each event when it is emitted. Both stamps are
time.monotonic() (CLOCK_MONOTONIC, one clock for both processes).

Loads:

- sequential: a payment is created and simulated `paid` over HTTP (2 events), and both deliveries
  arrive before the next payment (--sequential payments, once);
- burst: --events (1000) events emitted in one state change, all in flight at once;
- throughput: --throughput-events (5000) events in one state change; deliveries/s from the first
  emit to the last arrival;
- sustained: --rate events/s (1000) for --seconds (3), one state change per event.

Baseline, in the same run and to the same endpoint: a bare aiohttp client (one session with the
engine's connection limits) POSTing the same signed bodies: all at once for burst and throughput,
at the same rate for sustained. Then every delivery record of the engine's loads is checked
(`succeeded` after one attempt) and the endpoint must have refused no signature.

    python bench/webhook_latency.py [--events 1000] [--throughput-events 5000] [--rate 1000]
        [--seconds 3] [--sequential 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

KEY = "sk_test_19g744zrbw5buqxqpxp5w4gj"
AUTH = {"Authorization": f"Bearer {KEY}"}
MERCHANT = "mer_mercadoazul"
EVENT_TYPE = "claim.opened"  # no listener but the engine and the stream reacts to it


# -- the endpoint (child process) ---------------------------------------------------------------


async def run_receiver() -> None:
    from payorch.webhooks import SIGNATURE_HEADER, SignatureVerificationError, verify

    arrived: dict[str, float] = {}
    state: dict[str, Any] = {"secret": "", "bad": 0}

    async def hook(request: web.Request) -> web.Response:
        body = await request.read()
        at = time.monotonic()
        try:
            event = verify(body, request.headers.get(SIGNATURE_HEADER), state["secret"])
        except SignatureVerificationError:
            state["bad"] += 1
            return web.Response(status=400, text="bad signature")
        arrived[event["id"]] = at
        return web.Response(text="ok")

    async def set_secret(request: web.Request) -> web.Response:
        state["secret"] = (await request.read()).decode()
        return web.Response(text="ok")

    async def stamps(_request: web.Request) -> web.Response:
        cpu = time.process_time()  # this process's CPU seconds so far
        body = json.dumps({"arrived": arrived, "bad": state["bad"], "cpu": cpu})
        arrived.clear()
        state["bad"] = 0
        return web.Response(text=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/hooks", hook)
    app.router.add_post("/_secret", set_secret)
    app.router.add_get("/_stamps", stamps)
    runner, url = await serve(app)
    print(url, flush=True)
    try:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # parent gone
    finally:
        await runner.cleanup()


# -- helpers ------------------------------------------------------------------------------------


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


class Receiver:
    """The child process's endpoint: its URL and the arrivals it stamped."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str) -> None:
        self.proc = proc
        self.base = url
        self.url = url + "/hooks"
        self.bad = 0
        self.cpu = 0.0  # the endpoint's CPU seconds at the last take()
        self._http = aiohttp.ClientSession()

    @classmethod
    async def start(cls) -> Receiver:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--receiver",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        line = await proc.stdout.readline()
        return cls(proc, line.decode().strip())

    async def set_secret(self, secret: str) -> None:
        async with self._http.post(self.base + "/_secret", data=secret.encode()) as response:
            assert response.status == 200

    async def take(self) -> tuple[dict[str, float], float]:
        """Arrivals since the last call, and the endpoint's CPU seconds spent since then (and
        count refused signatures)."""
        async with self._http.get(self.base + "/_stamps") as response:
            body = await response.json()
        self.bad += body["bad"]
        cpu, self.cpu = body["cpu"] - self.cpu, body["cpu"]
        return body["arrived"], cpu

    async def stop(self) -> None:
        await self._http.close()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


@dataclass
class Run:
    latencies_ms: list[float]
    per_second: float  # deliveries / (last arrival - first emit)
    sender_us: float = 0.0  # CPU per delivery in this process (emit, engine, client)
    receiver_us: float = 0.0  # CPU per delivery in the endpoint's process


def measure(emitted: dict[str, float], arrived: dict[str, float]) -> Run:
    missing = set(emitted) - set(arrived)
    assert not missing, f"{len(missing)} of {len(emitted)} events never arrived"
    latencies = [(arrived[i] - t) * 1000 for i, t in emitted.items()]
    span = max(arrived[i] for i in emitted) - min(emitted.values())
    return Run(latencies, len(emitted) / span)


async def timed(load: Callable[[], Awaitable[dict[str, float]]], receiver: Receiver) -> Run:
    began = time.process_time()
    emitted = await load()
    sender = time.process_time() - began
    arrived, endpoint = await receiver.take()
    run = measure(emitted, arrived)
    run.sender_us, run.receiver_us = sender / len(emitted) * 1e6, endpoint / len(emitted) * 1e6
    return run


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def spread(values: list[float], fmt: str = "7.2f") -> str:
    return " / ".join(format(v, fmt) for v in (min(values), statistics.median(values), max(values)))


# -- the two senders ----------------------------------------------------------------------------


class Engine:
    """Events through the app's bus; the engine delivers them."""

    def __init__(self, app: web.Application, data: dict[str, Any]) -> None:
        from simulator.http.keys import BUS, ENGINE, STORE

        self.app = app
        self.bus, self.store, self.engine = app[BUS], app[STORE], app[ENGINE]
        self.data = data
        self.sent: list[str] = []  # every event id, for the final check
        self._n = 0

    def _emit(self, emitted: dict[str, float]) -> None:
        self._n += 1
        at = time.monotonic()
        event = self.bus.emit(
            MERCHANT, "sandbox", EVENT_TYPE, {**self.data, "id": f"CLM-{self._n}"}
        )
        emitted[event["id"]] = at

    async def burst(self, count: int) -> dict[str, float]:
        emitted: dict[str, float] = {}
        with self.store.batch():  # one state change
            for _ in range(count):
                self._emit(emitted)
        await self.engine.drain()
        self.sent += emitted
        return emitted

    async def sustained(self, rate: float, seconds: float) -> dict[str, float]:
        emitted: dict[str, float] = {}
        began = time.monotonic()
        while (elapsed := time.monotonic() - began) < seconds:
            while len(emitted) < rate * elapsed:
                with self.store.batch():  # one state change per event
                    self._emit(emitted)
            await asyncio.sleep(0.001)
        await self.engine.drain()
        self.sent += emitted
        return emitted


class Bare:
    """The baseline: the same signed bodies POSTed by a bare aiohttp client."""

    def __init__(self, url: str, secret: str, template: dict[str, Any]) -> None:
        from simulator.events.engine import CONNECTIONS_PER_HOST, CONNECTIONS_TOTAL

        self.url = url
        self.secret = secret
        self.template = template
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=CONNECTIONS_TOTAL, limit_per_host=CONNECTIONS_PER_HOST
            )
        )

    def _requests(self, count: int) -> list[tuple[str, bytes, dict[str, str]]]:
        from simulator.domain.deliveries import event_body
        from simulator.events.signing import delivery_headers

        built = []
        for _ in range(count):
            event = {**self.template, "id": "evt_" + secrets.token_hex(12)}
            body = event_body(event)
            headers = delivery_headers(
                body,
                event_type=EVENT_TYPE,
                delivery_id="dlv_" + secrets.token_hex(12),
                timestamp=int(time.time()),
                secret=self.secret,
            )
            built.append((event["id"], body, headers))
        return built

    async def _post(self, body: bytes, headers: dict[str, str]) -> None:
        async with self.session.post(self.url, data=body, headers=headers) as response:
            await response.read()
            assert response.status == 200, response.status

    async def burst(self, count: int) -> dict[str, float]:
        requests = self._requests(count)
        emitted: dict[str, float] = {}
        tasks = []
        for event_id, body, headers in requests:
            emitted[event_id] = time.monotonic()
            tasks.append(asyncio.create_task(self._post(body, headers)))
        await asyncio.gather(*tasks)
        return emitted

    async def sustained(self, rate: float, seconds: float) -> dict[str, float]:
        requests = iter(self._requests(int(rate * seconds) + 1))
        emitted: dict[str, float] = {}
        tasks = []
        began = time.monotonic()
        while (elapsed := time.monotonic() - began) < seconds:
            while len(emitted) < rate * elapsed:
                event_id, body, headers = next(requests)
                emitted[event_id] = time.monotonic()
                tasks.append(asyncio.create_task(self._post(body, headers)))
            await asyncio.sleep(0.001)
        await asyncio.gather(*tasks)
        return emitted

    async def sequential(self, count: int, receiver: Receiver) -> list[float]:
        emitted: dict[str, float] = {}
        for event_id, body, headers in self._requests(count):
            emitted[event_id] = time.monotonic()
            await self._post(body, headers)
        return measure(emitted, (await receiver.take())[0]).latencies_ms


# -- main ---------------------------------------------------------------------------------------


async def sequential_engine(
    app: web.Application, api: aiohttp.ClientSession, payments: int, receiver: Receiver
) -> tuple[list[float], dict[str, Any]]:
    """Payments created and paid over HTTP, one at a time; returns latencies and a payment view."""
    from simulator.http.keys import BUS, ENGINE

    emitted: dict[str, float] = {}
    unsubscribe = app[BUS].subscribe(
        lambda event: emitted.setdefault(event["id"], time.monotonic())
    )
    view: dict[str, Any] = {}
    try:
        for _ in range(payments):
            async with api.post(
                "/api/v1/payments", json={"amount": 10, "paymentMethodId": "1001"}
            ) as response:
                created = await response.json()
            tx = created["transactionId"]
            async with api.post(f"/api/v1/payments/{tx}/simulate", json={"action": "paid"}) as r:
                assert r.status == 200, await r.text()
            await app[ENGINE].drain()  # both deliveries answered (so: arrived)
            async with api.get(f"/api/v1/payments/{tx}") as response:
                view = await response.json()
    finally:
        unsubscribe()
    return measure(emitted, (await receiver.take())[0]).latencies_ms, view


def check_records(app: web.Application, event_ids: list[str], receiver: Receiver) -> str:
    from simulator.http.keys import STORE

    wanted = set(event_ids)
    statuses: Counter[str] = Counter()
    for delivery in app[STORE].table("webhook_deliveries").values():
        if delivery["eventId"] in wanted:
            ok = delivery["status"] == "succeeded" and len(delivery["attempts"]) == 1
            statuses["succeeded after 1 attempt" if ok else delivery["status"]] += 1
    assert statuses == Counter({"succeeded after 1 attempt": len(wanted)}), statuses
    assert receiver.bad == 0, f"{receiver.bad} deliveries failed signature verification"
    return (
        f"checked: {len(wanted)} delivery records, all succeeded after 1 attempt; "
        f"the endpoint verified every signature ({receiver.bad} refused)"
    )


async def main(args: argparse.Namespace) -> None:
    from simulator.app import create_app
    from simulator.settings import Settings

    receiver = await Receiver.start()
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Settings(data_dir=Path(tmp) / "data", rate_limit=False))
        runner, base = await serve(app)
        try:
            async with aiohttp.ClientSession(base, headers=AUTH) as api:
                async with api.post(
                    "/api/v1/webhooks", json={"url": receiver.url, "events": "*"}
                ) as response:
                    assert response.status == 201, await response.text()
                    secret = (await response.json())["secret"]
                await receiver.set_secret(secret)
                seq_engine, view = await sequential_engine(app, api, args.sequential, receiver)
            # Claim events carrying a payment view: the size of a real payment event.
            data = {"id": "CLM-0", "payment": view}
            engine = Engine(app, data)
            template = {
                "type": EVENT_TYPE,
                "apiVersion": "2026-05-01",
                "environment": "sandbox",
                "createdAt": "2026-11-22T10:00:00.000Z",
                "data": data,
            }
            bare = Bare(receiver.url, secret, template)
            try:
                seq_bare = await bare.sequential(args.sequential * 2, receiver)
                await report(engine, bare, receiver, args, seq_engine, seq_bare)
                print(check_records(app, engine.sent, receiver))
            finally:
                await bare.session.close()
        finally:
            await runner.cleanup()
            await receiver.stop()


async def report(
    engine: Engine,
    bare: Bare,
    receiver: Receiver,
    args: argparse.Namespace,
    seq_engine: list[float],
    seq_bare: list[float],
) -> None:
    # Warm-up: connections opened, code paths taken once.
    await timed(lambda: engine.burst(200), receiver)
    await timed(lambda: bare.burst(200), receiver)

    loads: dict[str, Callable[[], Awaitable[dict[str, float]]]] = {
        "burst engine": lambda: engine.burst(args.events),
        "burst bare": lambda: bare.burst(args.events),
        "throughput engine": lambda: engine.burst(args.throughput_events),
        "throughput bare": lambda: bare.burst(args.throughput_events),
        "sustained engine": lambda: engine.sustained(args.rate, args.seconds),
        "sustained bare": lambda: bare.sustained(args.rate, args.seconds),
    }
    results: dict[str, list[Run]] = {name: [] for name in loads}
    for _ in range(args.rounds):
        for name, load in loads.items():
            results[name].append(await timed(load, receiver))

    body = len(bare._requests(1)[0][1])
    print(
        f"{args.rounds} rounds, each figure min / median / max over them; {body}-byte bodies; "
        f"CPU = microseconds per delivery in the sending process / in the endpoint's "
        f"(sustained: with the pacing loop's)"
    )
    print(
        f"sequential ({args.sequential} payments over HTTP, 2 events each; one round)\n"
        f"  engine   median {statistics.median(seq_engine):6.2f} ms  p99 {p99(seq_engine):6.2f} ms"
        f"\n  bare     median {statistics.median(seq_bare):6.2f} ms  p99 {p99(seq_bare):6.2f} ms"
    )

    def block(title: str, prefix: str) -> None:
        print(title)
        for who in ("engine", "bare"):
            runs = results[f"{prefix} {who}"]
            medians = [statistics.median(r.latencies_ms) for r in runs]
            print(
                f"  {who:<7} median {spread(medians)} ms   "
                f"p99 {spread([p99(r.latencies_ms) for r in runs])} ms\n"
                f"  {'':<7} {spread([r.per_second for r in runs], '6.0f')} deliveries/s   "
                f"CPU {statistics.median(r.sender_us for r in runs):4.0f} / "
                f"{statistics.median(r.receiver_us for r in runs):3.0f}"
            )
        engine_rates = [r.per_second for r in results[f"{prefix} engine"]]
        bare_rates = [r.per_second for r in results[f"{prefix} bare"]]
        ratio = statistics.median(engine_rates) / statistics.median(bare_rates)
        print(f"  ratio engine / bare, deliveries/s (medians): {ratio:.2f}")

    block(f"burst: {args.events} events in one state change, all in flight", "burst")
    # What a burst's median and p99 can be at best: the k-th delivery waits for k deliveries to
    # be handled by whichever process spends more CPU on each (they run on separate cores).
    runs = results["burst engine"] + results["burst bare"]
    endpoint_us = statistics.median(r.receiver_us for r in runs)
    bare_us = statistics.median(r.sender_us for r in results["burst bare"])
    median_k, p99_k = args.events * 0.5 / 1000, args.events * 0.99 / 1000
    print(
        f"  floor for a burst (median / p99): {median_k * endpoint_us:.0f} / "
        f"{p99_k * endpoint_us:.0f} ms from the endpoint's CPU alone, "
        f"{median_k * bare_us:.0f} / {p99_k * bare_us:.0f} ms from a bare aiohttp client's"
    )
    block(f"throughput: {args.throughput_events} events in one state change", "throughput")
    block(
        f"sustained: {args.rate:g} events/s for {args.seconds:g} s, one state change each",
        "sustained",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000, help="burst size (in flight at once)")
    parser.add_argument("--throughput-events", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=1000.0, help="sustained events/s")
    parser.add_argument("--seconds", type=float, default=3.0, help="sustained duration")
    parser.add_argument("--sequential", type=int, default=200, help="payments, one at a time")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--receiver", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    asyncio.run(run_receiver() if options.receiver else main(options))
