"""GET /_sim/events: a server-sent-events stream of the caller's events, as emitted."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import ClientResponse

from simulator.http.keys import BUS, STORE, STREAM
from tests.api.webhook_receiver import paid_payment
from tests.conftest import Api, Keys, assert_error


async def open_stream(api: Api, key: str) -> ClientResponse:
    response = await api.client.get("/_sim/events", headers={"Authorization": f"Bearer {key}"})
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return response


async def next_event(response: ClientResponse, timeout: float = 5.0) -> dict[str, Any]:
    """The next `data:` frame's envelope (skipping comments and ids)."""

    async def read() -> dict[str, Any]:
        while True:
            line = await response.content.readline()
            assert line, "the stream ended"
            if line.startswith(b"data: "):
                return json.loads(line[len(b"data: ") :])

    return await asyncio.wait_for(read(), timeout)


async def test_stream_carries_each_event_as_emitted(api: Api, keys: Keys) -> None:
    response = await open_stream(api, keys.sandbox_sk)
    assert await response.content.readline() == b"retry: 3000\n"
    tx = await paid_payment(api)
    first, second = await next_event(response), await next_event(response)
    assert [first["type"], second["type"]] == ["payment.completed", "payment.captured"]
    assert set(first) == {"id", "type", "apiVersion", "environment", "createdAt", "data"}
    assert first["data"]["id"] == tx["transactionId"] and first["environment"] == "sandbox"
    stored = api.client.server.app[STORE].table("events").get(first["id"])
    assert {k: v for k, v in stored.items() if k != "merchantId"} == first
    response.close()


async def test_stream_is_scoped_to_merchant_and_environment(api: Api, keys: Keys) -> None:
    other = await open_stream(api, keys.other_sk)
    mine = await open_stream(api, keys.sandbox_sk)
    await paid_payment(api)  # mercadoazul sandbox
    live = await api.pay(keys.live_sk)  # mercadoazul production: not this stream's
    await paid_payment(api, keys.other_sk)
    assert (await next_event(mine))["type"] == "payment.completed"
    event = await next_event(other)
    assert event["type"] == "payment.completed" and event["data"]["id"] != live["transactionId"]
    for response in (mine, other):
        response.close()


async def test_keep_alive_comments_and_clean_disconnect(api: Api, keys: Keys) -> None:
    stream = api.client.server.app[STREAM]
    stream.keepalive_seconds = 0.05
    response = await open_stream(api, keys.sandbox_sk)
    lines = [await response.content.readline() for _ in range(5)]
    assert b": keep-alive\n" in lines
    assert stream.readers(("mer_mercadoazul", "sandbox")) == 1
    response.close()
    for _ in range(100):  # the next keep-alive write notices the reader is gone
        if stream.readers(("mer_mercadoazul", "sandbox")) == 0:
            break
        await asyncio.sleep(0.02)
    assert stream.readers(("mer_mercadoazul", "sandbox")) == 0


async def test_shutdown_ends_open_streams(api: Api, keys: Keys) -> None:
    response = await open_stream(api, keys.sandbox_sk)
    api.client.server.app[STREAM].close_all()
    body = await asyncio.wait_for(response.content.read(), 5)
    assert body.endswith(b"\n\n")  # the stream ended cleanly, not cut


async def test_rolled_back_events_are_not_streamed(api: Api, keys: Keys) -> None:
    response = await open_stream(api, keys.sandbox_sk)
    app = api.client.server.app
    try:
        with app[STORE].batch():
            app[BUS].emit("mer_mercadoazul", "sandbox", "claim.opened", {"id": "CLM-GONE"})
            raise RuntimeError
    except RuntimeError:
        pass
    app[BUS].emit("mer_mercadoazul", "sandbox", "claim.opened", {"id": "CLM-KEPT"})
    assert (await next_event(response))["data"]["id"] == "CLM-KEPT"
    response.close()


async def test_stream_needs_sandbox_secret_credentials(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/_sim/events", keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    status, body, _ = await api.get("/_sim/events")
    assert_error(status, body, 401, "missing_credentials")
