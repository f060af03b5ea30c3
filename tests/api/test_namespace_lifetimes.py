"""Namespace lifetimes beyond the idle one (issue 34): a maximum age, an absolute expiry and
`extend`; an expired namespace is gone within a second of its due time, its data off the disk."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from simulator.app import create_app
from simulator.settings import Settings
from tests.api.test_team import ADMIN, team_settings, token
from tests.conftest import KEYS, Api, assert_error

SK = KEYS.sandbox_sk


def iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


async def local(aiohttp_client: Any, tmp_path: Path) -> Api:
    settings = Settings(data_dir=tmp_path / "data", tick_seconds=0, seed=1234, rate_limit=False)
    return Api(await aiohttp_client(create_app(settings)))


async def gone_after(api: Api, name: str, directory: Path, due: float) -> float:
    """Seconds past `due` when `name` answers 404 and its directory is gone."""
    while True:
        status, _, _ = await api.get(f"/_sim/namespaces/{name}", SK)
        if status == 404 and not directory.exists():
            return time.time() - due
        assert time.time() < due + 5, "still there 5 s after its due time"
        await asyncio.sleep(0.02)


async def test_max_age_deletes_within_a_second(aiohttp_client: Any, tmp_path: Path) -> None:
    api = await local(aiohttp_client, tmp_path)
    made = time.time()
    status, body, _ = await api.call("PUT", "/_sim/namespaces/short", SK, json={"maxAgeSeconds": 1})
    assert status == 201 and body["expiresAt"]
    key = next(k["secretKey"] for k in body["keys"] if k["environment"] == "sandbox")
    assert (await api.get("/ping", key))[0] == 200
    directory = tmp_path / "data" / "namespaces" / "short"
    assert directory.exists()
    late = await gone_after(api, "short", directory, made + 1)
    assert late < 1.0, late
    status, body, _ = await api.get("/ping", key)
    assert_error(status, body, 401, "invalid_api_key")
    print(f"\nmax age 1 s: gone {late * 1000:.0f} ms after its due time")


async def test_expires_at_and_extend(aiohttp_client: Any, tmp_path: Path) -> None:
    api = await local(aiohttp_client, tmp_path)
    due = time.time() + 2
    status, body, _ = await api.call(
        "PUT", "/_sim/namespaces/dated", SK, json={"expiresAt": iso(due)}
    )
    assert status == 201, body
    status, body, _ = await api.post("/_sim/namespaces/dated/extend", SK, json={"seconds": 1})
    assert status == 200 and body["expiresAt"] == iso(int(due) + 1)
    await asyncio.sleep(max(0.0, int(due) + 0.5 - time.time()))  # past the first due time
    assert (await api.get("/_sim/namespaces/dated", SK))[0] == 200  # extended: still there
    late = await gone_after(api, "dated", tmp_path / "data" / "namespaces" / "dated", int(due) + 1)
    assert late < 1.0, late


async def test_bad_lifetimes_are_refused_and_nothing_is_made(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    api = await local(aiohttp_client, tmp_path)
    for body_, param in (
        ({"maxAgeSeconds": 0}, "maxAgeSeconds"),
        ({"maxAgeSeconds": -1}, "maxAgeSeconds"),
        ({"expiresAt": "tomorrow"}, "expiresAt"),
        ({"expiresAt": "2020-01-01T00:00:00Z"}, "expiresAt"),
    ):
        status, body, _ = await api.call("PUT", "/_sim/namespaces/bad", SK, json=body_)
        assert assert_error(status, body, 400, "invalid_request")["param"] == param
    assert (await api.get("/_sim/namespaces/bad", SK))[0] == 404
    await api.call("PUT", "/_sim/namespaces/ok", SK)
    status, body, _ = await api.post("/_sim/namespaces/ok/extend", SK, json={})
    assert_error(status, body, 400, "invalid_request")


async def test_an_owner_extends_its_own_only(aiohttp_client: Any, tmp_path: Path) -> None:
    api = Api(await aiohttp_client(create_app(team_settings(tmp_path))))
    alice, bob = await token(api, "alice"), await token(api, "bob")
    status, _, _ = await api.call("PUT", "/_sim/namespaces/a-1", alice, json={"maxAgeSeconds": 60})
    assert status == 201
    status, body, _ = await api.post("/_sim/namespaces/a-1/extend", bob, json={"seconds": 60})
    assert_error(status, body, 404, "namespace_not_found")
    status, body, _ = await api.post("/_sim/namespaces/a-1/extend", alice, json={"seconds": 60})
    assert status == 200, body
    _, trail, _ = await api.get("/_sim/audit?namespace=a-1", ADMIN)
    assert [(e["action"], e["status"]) for e in trail["data"]] == [
        ("namespace.create", 201),
        ("namespace.extend", 404),
        ("namespace.extend", 200),
    ]


async def test_lifetimes_past_ten_years_are_refused(aiohttp_client: Any, tmp_path: Path) -> None:
    api = await local(aiohttp_client, tmp_path)
    for body_ in (
        {"maxAgeSeconds": 10**30},
        {"expiresAt": "9999-12-31T23:59:59Z"},
        {"expiresAt": "0001-01-01T00:00:00+14:00"},
    ):
        status, body, _ = await api.call("PUT", "/_sim/namespaces/far", SK, json=body_)
        assert_error(status, body, 400, "invalid_request")
    await api.call("PUT", "/_sim/namespaces/near", SK)
    status, body, _ = await api.post("/_sim/namespaces/near/extend", SK, json={"seconds": 10**30})
    assert_error(status, body, 400, "invalid_request")
