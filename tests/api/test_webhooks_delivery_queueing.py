"""Deliveries queue per endpoint host before they are sent: many in flight to one endpoint."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from simulator.app import create_app
from simulator.http.keys import BUS, ENGINE, STORE
from simulator.settings import Settings
from tests.api.webhook_receiver import Receiver, drain, start_receiver, subscribe
from tests.conftest import Api

MERCHANT = "mer_mercadoazul"


@pytest.fixture
async def receiver(aiohttp_server: Any) -> Receiver:
    return await start_receiver(aiohttp_server)


def emit_claims(app: Any, count: int) -> list[str]:
    """`count` events in one state change, through the real bus; their ids."""
    with app[STORE].batch():
        return [
            app[BUS].emit(MERCHANT, "sandbox", "claim.opened", {"id": f"CLM-{n}"})["id"]
            for n in range(count)
        ]


def statuses(app: Any, event_ids: list[str]) -> Counter[tuple[str, int]]:
    wanted = set(event_ids)
    return Counter(
        (d["status"], len(d["attempts"]))
        for d in app[STORE].table("webhook_deliveries").values()
        if d["eventId"] in wanted
    )


async def test_waiting_for_a_connection_does_not_count_against_the_timeout(
    api: Api, receiver: Receiver
) -> None:
    # 80 deliveries to one endpoint that answers each in 0.3 s, over its 16 connections: five
    # waves, the last one sent 1.2 s after the burst. Each attempt is timed from its sending, so
    # none of them reaches the 1 s timeout by waiting for its turn.
    receiver.delay = 0.3
    await subscribe(api, receiver.url, ["claim.opened"])
    app = api.client.server.app
    app[ENGINE].timeout = 1.0
    event_ids = emit_claims(app, 80)
    await receiver.wait_for(80, timeout=30)
    await drain(api.client)
    assert statuses(app, event_ids) == Counter({("succeeded", 1): 80})
    assert len({item.delivery_id for item in receiver.received}) == 80


async def test_a_burst_reaches_every_endpoint_once(api: Api, aiohttp_server: Any) -> None:
    first, second = await start_receiver(aiohttp_server), await start_receiver(aiohttp_server)
    await subscribe(api, first.url, ["claim.opened"])
    await subscribe(api, second.url, ["claim.opened"])
    app = api.client.server.app
    event_ids = emit_claims(app, 300)
    await first.wait_for(300, timeout=30)
    await second.wait_for(300, timeout=30)
    await drain(api.client)
    assert statuses(app, event_ids) == Counter({("succeeded", 1): 600})
    for receiver in (first, second):
        assert sorted(item.json()["id"] for item in receiver.received) == sorted(event_ids)


async def test_events_emitted_before_the_server_starts_are_sent_once_it_does(
    settings: Settings, receiver: Receiver
) -> None:
    client = TestClient(TestServer(create_app(settings)))
    await client.start_server()
    try:
        await subscribe(Api(client), receiver.url, ["claim.opened"])
    finally:
        await client.close()
    app = create_app(settings)
    event_ids = emit_claims(app, 3)  # e.g. by start-up work, before the engine runs
    client = TestClient(TestServer(app))
    await client.start_server()
    try:
        await receiver.wait_for(3)
        await drain(client)
        assert statuses(app, event_ids) == Counter({("succeeded", 1): 3})
        assert (
            len(receiver.received) == 3
        )  # queued twice (emitted, and pending at start): sent once
    finally:
        await client.close()
