"""Saved states (/_sim/state) through the public surface: save, list, restore, delete; the world
after a restore answers as it did at the save, on disk too; bad input changes nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.app import create_app
from simulator.http.keys import DEPOSITS, RESET, SETTINGS, STORE
from simulator.settings import Settings
from tests.api.test_deposits import create
from tests.api.test_refunds import funded
from tests.api.webhook_receiver import paid_payment
from tests.conftest import Api, Keys, assert_error

SK = Keys().sandbox_sk


async def save(api: Api, name: str, **extra: Any) -> dict[str, Any]:
    status, body, _ = await api.post("/_sim/state", SK, json={"name": name, **extra})
    assert status == 201, body
    return body


async def restore(api: Api, name: str) -> dict[str, Any]:
    status, body, _ = await api.post(f"/_sim/state/{name}/restore", SK)
    assert status == 200, body
    return body


async def names(api: Api) -> list[str]:
    status, body, _ = await api.get("/_sim/state", SK)
    assert status == 200, body
    return [state["name"] for state in body["data"]]


async def picture(api: Api) -> list[Any]:
    """What a client sees of the world: payments, balance, subscriptions, deposit accounts."""
    seen = []
    for path in ("/payments?limit=100", "/me/balance", "/webhooks", "/me/deposit-accounts"):
        status, body, _ = await api.get(path, SK)
        assert status == 200, body
        seen.append(body)
    return seen


async def test_a_restore_puts_back_the_world_of_the_save(api: Api, keys: Keys) -> None:
    paid, *_ = await funded(api, keys)  # completed, and their money available
    status, refund, _ = await api.post(
        f"/payments/{paid['transactionId']}/refund", SK, json={"amount": 10}
    )
    assert status == 200, refund
    await api.post("/webhooks", SK, json={"events": "*"})
    offset = (await api.advance(3600))["offsetSeconds"]
    before = await picture(api)
    saved = await save(api, "ready")
    assert saved["name"] == "ready" and saved["transactions"] == 3 and saved["version"] == 1
    assert saved["offsetSeconds"] == pytest.approx(offset, abs=1)
    assert saved["sizeBytes"] > 0

    # Change everything a restore must undo.
    later = await api.pay()
    await api.post(f"/payments/{paid['transactionId']}/refund", SK, json={"amount": 5})
    await api.post("/webhooks", SK, json={"events": "*"})
    await create(api, "after-save")
    await api.advance(86_400 * 3)
    assert await picture(api) != before

    body = await restore(api, "ready")
    assert body["name"] == "ready" and body["transactions"] == 3
    assert body["clock"]["offsetSeconds"] == pytest.approx(offset, abs=1)
    assert await picture(api) == before
    status, out, _ = await api.get(f"/payments/{later['transactionId']}", SK)
    assert_error(status, out, 404, "transaction_not_found")
    # The restored world runs: a payment and a clock advance work on it.
    await paid_payment(api)
    assert (await api.advance(60))["offsetSeconds"] == pytest.approx(offset + 60, abs=1)
    # Restoring twice gives the same world again.
    await restore(api, "ready")
    assert await picture(api) == before


async def test_every_table_is_saved_whoever_added_it(api: Api) -> None:
    store = api.client.server.app[STORE]
    store.table("some_new_table").put("x1", {"id": "x1", "n": 1})
    await save(api, "s")
    store.table("some_new_table").put("x1", {"id": "x1", "n": 2})
    store.table("another_new_table").put("y", {"id": "y"})
    await restore(api, "s")
    assert store.table("some_new_table").get("x1") == {"id": "x1", "n": 1}
    assert len(store.table("another_new_table")) == 0


async def test_states_survive_a_restart_and_the_restore_is_on_disk(
    api: Api, aiohttp_client: Any
) -> None:
    kept = await api.pay()
    await api.advance(7200)
    await save(api, "base")
    gone = await api.pay()
    await restore(api, "base")
    settings = api.client.app[SETTINGS]
    await api.client.close()
    again = Api(await aiohttp_client(create_app(settings)))
    assert await names(again) == ["base"]
    status, _, _ = await again.get(f"/payments/{kept['transactionId']}", SK)
    assert status == 200
    status, out, _ = await again.get(f"/payments/{gone['transactionId']}", SK)
    assert_error(status, out, 404, "transaction_not_found")
    status, clock, _ = await again.get("/_sim/clock", SK)
    assert clock["offsetSeconds"] == pytest.approx(7200, abs=1)
    await restore(again, "base")


async def test_access_tokens_survive_a_restore(api: Api, keys: Keys) -> None:
    await save(api, "t")
    status, pair, _ = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    assert status == 200, pair
    await restore(api, "t")
    status, out, _ = await api.get("/ping", pair["accessToken"])
    assert status == 200, out


async def test_save_refuses_an_existing_name_unless_told_to_overwrite(api: Api) -> None:
    await save(api, "one")
    tx = await api.pay()
    status, out, _ = await api.post("/_sim/state", SK, json={"name": "one"})
    assert assert_error(status, out, 409, "snapshot_exists")["param"] == "name"
    await restore(api, "one")  # still the first save: the payment is not in it
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", SK)
    assert status == 404
    tx = await api.pay()
    assert (await save(api, "one", overwrite=True))["transactions"] == 1
    await restore(api, "one")
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", SK)
    assert status == 200


@pytest.mark.parametrize(
    "name", ["", "a/b", "..", ".", ".hidden", "a" * 65, "a b", "ñ", "a\\b", "../etc"]
)
async def test_a_bad_name_is_refused_in_the_body(api: Api, name: str) -> None:
    status, out, _ = await api.post("/_sim/state", SK, json={"name": name})
    assert assert_error(status, out, 400, "invalid_request")["param"] == "name"
    assert await names(api) == []


@pytest.mark.parametrize("name", ["a%2Fb", "..hidden", "...", "a" * 65, "a%20b", "%00"])
async def test_a_bad_name_is_refused_in_the_path(api: Api, name: str) -> None:
    await save(api, "kept")
    tx = await api.pay()
    status, out, _ = await api.post(f"/_sim/state/{name}/restore", SK)
    assert assert_error(status, out, 400, "invalid_request")["param"] == "name"
    status, out, _ = await api.call("DELETE", f"/_sim/state/{name}", SK)
    assert assert_error(status, out, 400, "invalid_request")["param"] == "name"
    assert await names(api) == ["kept"]
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", SK)
    assert status == 200


async def test_unknown_states_are_404_and_delete_removes_one(api: Api) -> None:
    status, out, _ = await api.post("/_sim/state/nope/restore", SK)
    assert_error(status, out, 404, "snapshot_not_found")
    status, out, _ = await api.call("DELETE", "/_sim/state/nope", SK)
    assert_error(status, out, 404, "snapshot_not_found")
    await save(api, "a.b_c-1")
    await save(api, "b")
    assert await names(api) == ["a.b_c-1", "b"]
    status, out, _ = await api.call("DELETE", "/_sim/state/a.b_c-1", SK)
    assert status == 204, out
    assert await names(api) == ["b"]
    # Under the API's base URL too (generated clients).
    status, listed, _ = await api.get("/_sim/state", SK)
    aliased = await api.client.get("/api/v1/_sim/state", headers={"Authorization": f"Bearer {SK}"})
    assert aliased.status == 200 and await aliased.json() == listed


def _snapshot_file(api: Api, name: str) -> Path:
    data_dir = api.client.server.app[SETTINGS].data_dir
    assert data_dir is not None
    return data_dir / "snapshots" / f"{name}.json"


async def test_a_state_of_another_version_is_refused_with_both_versions(api: Api) -> None:
    await save(api, "old")
    tx = await api.pay()
    path = _snapshot_file(api, "old")
    head, rest = path.read_bytes().split(b"\n", 1)
    header = json.loads(head)
    header["payorchState"]["version"] = 0
    header["payorchState"]["payorch"] = "0.0.1"
    path.write_bytes(json.dumps(header).encode() + b"\n" + rest)
    status, out, _ = await api.post("/_sim/state/old/restore", SK)
    error = assert_error(status, out, 409, "snapshot_incompatible")
    assert error["details"]["snapshotVersion"] == 0 and error["details"]["serverVersion"] == 1
    assert "0.0.1" in error["message"] and "save it again" in error["message"]
    status, listed, _ = await api.get("/_sim/state", SK)
    assert listed["data"][0]["version"] == 0  # listed, with its version
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", SK)
    assert status == 200  # nothing changed


async def test_a_damaged_state_is_refused_and_changes_nothing(api: Api) -> None:
    await save(api, "dmg")
    tx = await api.pay()
    path = _snapshot_file(api, "dmg")
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0x01
    path.write_bytes(bytes(raw))
    status, out, _ = await api.post("/_sim/state/dmg/restore", SK)
    assert_error(status, out, 422, "snapshot_corrupt")
    status, _, _ = await api.get(f"/payments/{tx['transactionId']}", SK)
    assert status == 200


async def test_a_restore_during_another_restore_is_refused(api: Api) -> None:
    await save(api, "s")
    started = asyncio.Event()

    async def slow_provisioning() -> None:
        started.set()
        await asyncio.sleep(0.3)

    app = api.client.server.app
    app[DEPOSITS].before_insert = slow_provisioning
    running = asyncio.create_task(create(api, "before"))
    await started.wait()
    first = asyncio.create_task(api.post("/_sim/state/s/restore", SK))
    await asyncio.sleep(0.05)
    assert app[RESET].swapping and not app[RESET].gate_open
    status, out, _ = await api.post("/_sim/state/s/restore", SK)
    assert_error(status, out, 409, "restore_in_progress")
    arriving = asyncio.create_task(api.pay())  # an ordinary request waits for the restore
    assert (await running)[0] == 201
    assert (await first)[0] == 200
    after = await arriving
    status, _, _ = await api.get(f"/payments/{after['transactionId']}", SK)
    assert status == 200  # ran after the restore, in the restored world
    status, page, _ = await api.get("/me/deposit-accounts", SK)
    assert page["pagination"]["total"] == 0  # made before the restore: gone


async def test_production_credentials_cannot_touch_states(api: Api, keys: Keys) -> None:
    for method, path, body in (
        ("GET", "/_sim/state", None),
        ("POST", "/_sim/state", {"name": "x"}),
        ("POST", "/_sim/state/x/restore", None),
        ("DELETE", "/_sim/state/x", None),
    ):
        status, out, _ = await api.call(method, path, keys.live_sk, json=body)
        assert_error(status, out, 400, "production_key_refused")


async def test_a_server_without_a_data_dir_keeps_states_in_memory(aiohttp_client: Any) -> None:
    settings = Settings(data_dir=None, tick_seconds=0, seed=1234, rate_limit=False)
    api = Api(await aiohttp_client(create_app(settings)))
    kept = await api.pay()
    assert (await save(api, "mem"))["sizeBytes"] > 0
    gone = await api.pay()
    await restore(api, "mem")
    assert (await api.get(f"/payments/{kept['transactionId']}", SK))[0] == 200
    assert (await api.get(f"/payments/{gone['transactionId']}", SK))[0] == 404
    assert await names(api) == ["mem"]


async def test_a_file_changed_after_a_restore_is_read_again(api: Api) -> None:
    await save(api, "twice")
    await restore(api, "twice")  # the server keeps this state decoded
    path = _snapshot_file(api, "twice")
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0x01
    path.write_bytes(bytes(raw))
    status, out, _ = await api.post("/_sim/state/twice/restore", SK)
    assert_error(status, out, 422, "snapshot_corrupt")


async def test_a_state_saved_before_a_reset_restores_with_the_new_signing_secret(
    api: Api, keys: Keys
) -> None:
    kept = await api.pay()
    await save(api, "before-reset")
    status, _, _ = await api.post("/_sim/reset", SK)
    assert status == 200
    status, pair, _ = await api.post(
        "/auth/token", json={"apiKey": keys.sandbox_pk, "secretKey": keys.sandbox_sk}
    )
    await restore(api, "before-reset")
    assert (await api.get(f"/payments/{kept['transactionId']}", SK))[0] == 200
    status, out, _ = await api.get("/ping", pair["accessToken"])
    assert status == 200, out  # issued after the save, under the secret the server kept


async def test_a_seeded_server_mints_the_same_ids_after_each_restore(api: Api) -> None:
    await api.pay()
    await save(api, "seeded")
    await restore(api, "seeded")
    first = await api.pay()
    await api.pay()
    await restore(api, "seeded")
    again = await api.pay()
    assert again["transactionId"] == first["transactionId"]
