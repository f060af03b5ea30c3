"""A local webhook endpoint for tests: records every request, answers per a policy."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient
from multidict import CIMultiDictProxy

from simulator.http.keys import ENGINE
from tests.conftest import KEYS, Api


@dataclass
class Received:
    headers: CIMultiDictProxy[str]
    body: bytes
    at: float  # wall clock when it arrived

    @property
    def delivery_id(self) -> str:
        return self.headers["X-Service-Delivery"]

    @property
    def event_type(self) -> str:
        return self.headers["X-Service-Event"]

    @property
    def signature(self) -> str:
        return self.headers["X-Service-Signature"]

    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


# policy(request, number of earlier requests with the same delivery id) -> HTTP status
Policy = Callable[[Received, int], int]


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.policy: Policy = lambda item, seen: 200
        self.delay = 0.0
        # When set: every request waits for it before it is answered (a stuck endpoint, released
        # by the test), so tests of what must not wait for an endpoint need no wall-clock bound.
        self.gate: asyncio.Event | None = None
        self.url = ""
        self._changed = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        item = Received(request.headers, await request.read(), time.time())
        seen = sum(1 for r in self.received if r.delivery_id == item.delivery_id)
        self.received.append(item)
        self._changed.set()
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.gate is not None:
            await self.gate.wait()
        return web.Response(status=self.policy(item, seen), text="receiver says hi")

    async def wait_for(self, count: int, timeout: float = 5.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"got {len(self.received)} of {count} deliveries"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return self.received


async def start_receiver(aiohttp_server: Any) -> Receiver:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/{tail:.*}", receiver.handle)
    server = await aiohttp_server(app)
    receiver.url = str(server.make_url("/hooks"))
    return receiver


async def subscribe(
    api: Api, url: str | None, events: Any = "*", key: str = KEYS.sandbox_sk
) -> dict[str, Any]:
    body: dict[str, Any] = {"events": events}
    if url is not None:
        body["url"] = url
    status, sub, _ = await api.post("/webhooks", key, json=body)
    assert status == 201, sub
    return sub


async def paid_payment(api: Api, key: str = KEYS.sandbox_sk) -> dict[str, Any]:
    """A payment simulated to `paid`: fires payment.completed and payment.captured."""
    tx = await api.pay(key)
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", key, json={"action": "paid"}
    )
    assert status == 200, body
    return tx


async def drain(client: TestClient) -> None:
    await client.server.app[ENGINE].drain()


async def deliveries(api: Api, webhook_id: str, key: str = KEYS.sandbox_sk) -> list[dict]:
    status, page, _ = await api.get(f"/webhooks/{webhook_id}/deliveries?limit=100", key)
    assert status == 200, page
    return page["data"]
