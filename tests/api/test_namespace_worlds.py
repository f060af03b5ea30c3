"""Namespaces' worlds under pressure (issue 31): a world loaded for a request is in use before
anything is unloaded, nothing is loaded (or kept) for a request its credential cannot pass, and
a world loaded again runs what fell due while it was away before it answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.settings import Settings
from tests.api.test_namespaces import DEFAULT_SK, create
from tests.conftest import Api, assert_error


async def _server(aiohttp_client: Any, tmp_path: Path, **settings: Any) -> tuple[Api, Any]:
    options: dict[str, Any] = {"tick_seconds": 0, "rate_limit": False, **settings}
    app = create_app(Settings(data_dir=tmp_path / "data", **options))
    client: TestClient = await aiohttp_client(app)
    return Api(client), app


async def _loaded(api: Api) -> list[str]:
    _, listed, _ = await api.get("/_sim/namespaces", DEFAULT_SK)
    return [n["name"] for n in listed["data"] if n["loaded"] and n["name"] != "default"]


# -- item 2: a world being loaded is in use before anything is unloaded -------------------------


async def test_when_every_loaded_world_is_busy_a_new_one_is_503_never_a_closed_store(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api, _ = await _server(aiohttp_client, tmp_path, namespaces_in_memory=2)
    spaces = [await create(api, f"busy-{i}") for i in range(3)]
    # Two worlds held in use by their event streams: the cap is reached, nothing is unloadable.
    streams = [
        await api.client.get("/_sim/events", headers={"Authorization": f"Bearer {s.sk}"})
        for s in spaces[:2]
    ]
    assert [s.status for s in streams] == [200, 200]
    for _ in range(3):
        status, body, response = await api.post(
            "/payments", spaces[2].sk, json={"amount": 50, "paymentMethodId": "1001"}
        )
        assert_error(status, body, 503, "service_unavailable")
        assert int(response.headers["Retry-After"]) >= 1
    assert sorted(await _loaded(api)) == ["busy-0", "busy-1"]
    for stream in streams:
        stream.close()
    await asyncio.sleep(0.1)  # the streams' handlers see their connections go
    paid = await api.pay(spaces[2].sk)  # a world is free to unload now
    status, body, _ = await api.get(f"/payments/{paid['transactionId']}", spaces[2].sk)
    assert status == 200, body


# -- item 4: nothing is loaded, nor kept, for a request that cannot pass -------------------------


async def test_a_request_its_credential_cannot_pass_loads_no_world(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api, _ = await _server(aiohttp_client, tmp_path)
    space = await create(api, "shut")
    other = await create(api, "other")
    refused = {
        None: "missing_credentials",
        "Basic c2s6": "missing_credentials",
        "Bearer sk_test_ns_shut_000000000000000000000000": "invalid_api_key",
        f"Bearer {other.sk}": "invalid_api_key",  # another namespace's key under this prefix
        "Bearer rt_ns_shut_abc": "invalid_api_key",
        "Bearer ns_shut_not-a-token": "invalid_token",
    }
    for authorization, code in refused.items():
        headers = {"Authorization": authorization} if authorization else {}
        response = await api.client.get("/ns/shut/api/v1/ping", headers=headers)
        assert_error(response.status, await response.json(), 401, code)
    status, body, _ = await api.get("/ping", "sk_test_ns_shut_000000000000000000000000")
    assert_error(status, body, 401, "invalid_api_key")
    assert await _loaded(api) == []
    assert (await api.get("/ping", space.sk))[0] == 200  # its own key loads it
    assert await _loaded(api) == ["shut"]


async def test_requests_to_unknown_names_keep_nothing(aiohttp_client: Any, tmp_path: Path) -> None:
    import gc
    import tracemalloc

    api, _ = await _server(aiohttp_client, tmp_path)

    async def unknown(first: int, count: int) -> None:
        for i in range(first, first + count):
            response = await api.client.get(f"/ns/nobody-{i}/api/v1/ping")
            assert response.status == 404
            response.release()

    await unknown(0, 200)  # warm: caches of the server and the client fill once
    # What the server keeps: allocations in its own code (the client's garbage is not its).
    kept = [tracemalloc.Filter(True, "*/simulator/*")]
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.take_snapshot().filter_traces(kept)
        await unknown(200, 2000)
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(kept)
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # A lock per name kept ~300 bytes: 2,000 names, ~600 KB.
    assert grown < 100_000, grown


# -- item 6: a world loaded again runs what fell due before it answers ---------------------------


async def test_a_reloaded_world_runs_its_due_jobs_before_the_request(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    from datetime import datetime

    from freezegun import freeze_time

    api, _ = await _server(aiohttp_client, tmp_path, namespaces_in_memory=1)
    with freeze_time(real_asyncio=True) as frozen:
        a, b = await create(api, "late-a"), await create(api, "late-b")
        paid = await api.pay(a.sk)
        due = datetime.fromisoformat(paid["paymentData"]["dueDate"].replace("Z", "+00:00"))
        assert (await api.get("/ping", b.sk))[0] == 200  # loads b: a leaves memory
        assert await _loaded(api) == ["late-b"]
        frozen.tick((due - datetime.now(due.tzinfo)).total_seconds() + 60)
        status, body, _ = await api.get(f"/payments/{paid['transactionId']}", a.sk)
        assert status == 200 and body["status"] == "expired", body
        status, body, _ = await api.post(
            f"/payments/{paid['transactionId']}/simulate", a.sk, json={"action": "paid"}
        )
        assert status >= 400, body
