"""Namespaces across a crash (issue 24): `kill -9` under load spread over 50 namespaces.

Each round fires keyed payments (`POST /payments`, Idempotency-Key, `merchantOrderId` naming the
namespace and the key) at a real `payorch serve`, spread over 50 namespaces and routed by each
namespace's own key (half of them through `/ns/{name}` too), SIGKILLs the server at a random
instant into the burst, restarts it on the same data dir and retries every key, twice. Then:

- nothing acknowledged before the kill is lost: its retry replays the same bytes;
- no key executed twice: one payment per `merchantOrderId` in its namespace;
- no namespace holds another's data: every payment a namespace lists names that namespace.

Rounds: 3, or PAYORCH_NS_CRASH_ROUNDS; the kill instants come from PAYORCH_NS_CRASH_SEED (random
by default, printed with the figures: run with -s to see them).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from tests.cli.test_idempotency_crash import SANDBOX_SK, Server

ROUNDS = int(os.environ.get("PAYORCH_NS_CRASH_ROUNDS", "3"))
SEED = int(os.environ.get("PAYORCH_NS_CRASH_SEED", str(random.randrange(2**32))))
NAMESPACES = 50
PER_NAMESPACE = 4  # keyed payments per namespace and round
KILL_WINDOW = (0.020, 0.250)
SHOP = "shp_mazul_tienda"


@dataclass(frozen=True)
class Keyed:
    namespace: str
    key: str  # the namespace's secret key
    idempotency: str
    prefixed: bool

    def url(self, base: str) -> str:
        return base + (f"/ns/{self.namespace}" if self.prefixed else "") + "/api/v1/payments"

    @property
    def body(self) -> dict[str, Any]:
        order = f"{self.namespace}:{self.idempotency}"
        return {"amount": 10, "paymentMethodId": "1001", "merchantOrderId": order}


@dataclass
class Figures:
    rounds: int = 0
    acknowledged: int = 0
    lost: int = 0  # acknowledged, then answered differently (or not replayed) on retry
    duplicates: int = 0  # executions beyond the first, per key
    foreign: int = 0  # payments listed by a namespace that name another one
    failed: list[str] = field(default_factory=list)


async def post(session: aiohttp.ClientSession, base: str, req: Keyed) -> tuple[int, bytes, bool]:
    headers = {"Authorization": f"Bearer {req.key}", "Idempotency-Key": req.idempotency}
    async with session.post(req.url(base), json=req.body, headers=headers) as response:
        raw = await response.read()
        return response.status, raw, response.headers.get("Idempotent-Replayed") == "true"


async def create_namespaces(base: str) -> dict[str, str]:
    keys = {}
    async with aiohttp.ClientSession() as session:
        for i in range(NAMESPACES):
            name = f"crash-{i}"
            async with session.put(
                f"{base}/_sim/namespaces/{name}", headers={"Authorization": f"Bearer {SANDBOX_SK}"}
            ) as response:
                body = orjson.loads(await response.read())
                assert response.status == 201, body
            keys[name] = next(
                k["secretKey"]
                for k in body["keys"]
                if k["shopId"] == SHOP and k["environment"] == "sandbox"
            )
    return keys


def round_requests(number: int, keys: dict[str, str]) -> list[Keyed]:
    requests = [
        Keyed(name, key, f"r{number}-{i}", prefixed=(i + number) % 2 == 0)
        for name, key in keys.items()
        for i in range(PER_NAMESPACE)
    ]
    random.Random(number).shuffle(requests)
    return requests


async def burst(base: str, requests: list[Keyed], server: Server, kill_after: float) -> dict:
    acknowledged: dict[Keyed, tuple[int, bytes]] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:

        async def one(req: Keyed) -> None:
            try:
                status, raw, _ = await post(session, base, req)
            except (TimeoutError, aiohttp.ClientError):
                return  # cut off by the kill: never acknowledged
            acknowledged[req] = (status, raw)

        tasks = [asyncio.create_task(one(req)) for req in requests]
        await asyncio.sleep(kill_after)
        server.kill()
        await asyncio.gather(*tasks)
    return acknowledged


async def listed(session: aiohttp.ClientSession, base: str, key: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        async with session.get(
            f"{base}/api/v1/payments?limit=100&offset={len(rows)}",
            headers={"Authorization": f"Bearer {key}"},
        ) as response:
            page = orjson.loads(await response.read())
            assert response.status == 200, page
        rows += page["data"]
        if not page["data"] or len(rows) >= page["pagination"]["total"]:
            return rows


async def check_round(
    base: str, requests: list[Keyed], acknowledged: dict, keys: dict[str, str], figures: Figures
) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as session:
        first = await asyncio.gather(*(post(session, base, req) for req in requests))
        second = await asyncio.gather(*(post(session, base, req) for req in requests))
        for req, (status, raw, _), again in zip(requests, first, second, strict=True):
            if status != 200 or again != (200, raw, True):
                figures.failed.append(f"retry of {req.namespace}/{req.idempotency}: {status}")
                continue
            if req in acknowledged:
                figures.lost += acknowledged[req] != (200, raw)
        for name, key in keys.items():
            orders = Counter(p.get("merchantOrderId") for p in await listed(session, base, key))
            figures.foreign += sum(n for o, n in orders.items() if not o.startswith(f"{name}:"))
            figures.duplicates += sum(n - 1 for n in orders.values() if n > 1)


async def test_a_crash_under_load_over_50_namespaces(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    pick = random.Random(SEED)
    figures = Figures()
    server = Server(data_dir)
    try:
        keys = await create_namespaces(server.url)
        for number in range(ROUNDS):
            requests = round_requests(number, keys)
            acknowledged = await burst(server.url, requests, server, pick.uniform(*KILL_WINDOW))
            figures.rounds += 1
            figures.acknowledged += len(acknowledged)
            server = Server(data_dir)
            await check_round(server.url, requests, acknowledged, keys, figures)
    finally:
        server.kill()
    print(f"\nnamespace crash rounds (seed {SEED}): {figures}")
    assert figures.lost == figures.duplicates == figures.foreign == 0, figures
    assert not figures.failed, figures
