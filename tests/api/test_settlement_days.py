"""Settlement bookkeeping writes a bounded amount per paid payment, whatever the day's volume, and
a data dir written by an earlier version (a day document listing its payments) still closes
(issue 23, item 6)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from simulator.app import create_app
from simulator.clock import parse_iso
from simulator.domain.settlements import SettlementService
from simulator.http.keys import BUS, CLOCK, CONTEXT, SCHEDULER, SETTINGS, SETTLEMENTS, STORE
from simulator.settings import Settings
from simulator.store import Store
from tests.api.test_balance_rollback import fail_on
from tests.api.webhook_receiver import deliveries, drain, subscribe
from tests.conftest import Api, Keys

DAY = 86_400


async def start_of_a_day(api: Api) -> float:
    """Move the clock to just after 00:00 UTC, so what the test pays completes on one day."""
    now = parse_iso((await api.advance(0.001))["now"]).timestamp()
    at = (math.floor(now / DAY) + 1) * DAY + 60
    await api.advance(at - now)
    return at


async def pay(api: Api, key: str) -> str:
    tx_id: str = (await api.pay(key))["transactionId"]
    status, body, _ = await api.post(f"/payments/{tx_id}/simulate", key, json={"action": "paid"})
    assert status == 200, body
    return tx_id


def journal(api: Api) -> Path:
    data_dir = api.client.server.app[SETTINGS].data_dir
    assert data_dir is not None
    return data_dir / "journal.log"


async def bytes_to_pay(api: Api, key: str) -> int:
    """Journal bytes one `simulate paid` writes (the payment created beforehand)."""
    tx_id = (await api.pay(key))["transactionId"]
    before = journal(api).stat().st_size
    status, body, _ = await api.post(f"/payments/{tx_id}/simulate", key, json={"action": "paid"})
    assert status == 200, body
    with journal(api).open("rb") as file:
        file.seek(before)
        written = file.read()
    # One durable write: the payment's completion with its settlement entry, or neither.
    [line] = written.splitlines()
    assert [op[:2] for op in orjson.loads(line) if op[0] == "settlement_entries"] == [
        ["settlement_entries", tx_id]
    ]
    return len(written)


async def closed_settlements(api: Api, inbox: str) -> list[dict[str, Any]]:
    await drain(api.client)
    rows = await deliveries(api, inbox)
    return [row["event"]["data"] for row in reversed(rows)]  # oldest first


async def test_paying_a_payment_writes_as_much_on_a_busy_day_as_on_a_quiet_one(
    api: Api, keys: Keys
) -> None:
    await start_of_a_day(api)
    for _ in range(49):
        await pay(api, keys.sandbox_sk)
    fiftieth = await bytes_to_pay(api, keys.sandbox_sk)
    for _ in range(449):
        await pay(api, keys.sandbox_sk)
    five_hundredth = await bytes_to_pay(api, keys.sandbox_sk)
    # Before: the day's record listed every payment and was rewritten whole at each one, so the
    # 500th wrote 10 KB more than the 50th (23 bytes per payment already on the day).  What
    # still differs is digits: timestamps' decimals, running totals, the entry's place.
    assert abs(five_hundredth - fiftieth) <= 100, (fiftieth, five_hundredth)
    days = api.client.server.app[STORE].table("settlement_days").values()
    assert len(days) == 1 and "transactionIds" not in days[0]


async def test_the_day_closes_with_its_payments_in_the_order_they_were_paid(
    api: Api, keys: Keys
) -> None:
    inbox = await subscribe(api, None, ["settlement.closed"])
    await start_of_a_day(api)
    paid = [await pay(api, keys.sandbox_sk) for _ in range(3)]
    other = await pay(api, keys.other_sk)  # another merchant: its own settlement
    await api.advance(4 * DAY)
    [settlement] = await closed_settlements(api, inbox["id"])
    assert settlement["transactionIds"] == paid and settlement["transactionCount"] == 3
    assert other not in settlement["transactionIds"]
    store = api.client.server.app[STORE]
    assert store.table("settlement_entries").values() == []  # closed days leave nothing behind
    assert store.table("settlement_days").values() == []


async def test_a_payment_whose_write_fails_is_not_filed(
    api: Api, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = await subscribe(api, None, ["settlement.closed"])
    await start_of_a_day(api)
    first = await pay(api, keys.sandbox_sk)
    tx_id = (await api.pay())["transactionId"]
    fail_on(api, monkeypatch, "payment.captured")  # after payment.completed filed it
    status, _, _ = await api.post(
        f"/payments/{tx_id}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 500
    entries = api.client.server.app[STORE].table("settlement_entries")
    assert entries.get(tx_id) is None
    monkeypatch.undo()
    status, body, _ = await api.post(
        f"/payments/{tx_id}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200, body
    assert entries.get(tx_id) is not None  # filed now: the failed write left no trace in memory
    await api.advance(4 * DAY)
    [settlement] = await closed_settlements(api, inbox["id"])
    assert settlement["transactionIds"] == [first, tx_id]


async def test_a_close_whose_write_fails_keeps_the_day_as_it_was(
    api: Api, keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    await start_of_a_day(api)
    paid = [await pay(api, keys.sandbox_sk) for _ in range(3)]
    app = api.client.server.app
    store, service = app[STORE], app[SETTLEMENTS]
    days, entries = store.table("settlement_days"), store.table("settlement_entries")

    def state() -> tuple[list[Any], dict[str, Any]]:
        # An undone delete puts a document back at the end of its table: `place` keeps the order.
        return days.values(), {e["transactionId"]: e for e in entries.values()}

    stored = state()
    fail_on(api, monkeypatch, "settlement.closed")  # after the close deleted the day's documents
    await api.advance(4 * DAY)
    assert state() == stored
    rebuilt = SettlementService(
        days,
        entries,
        store.table("settlements"),
        app[CONTEXT].transactions,
        app[CONTEXT].catalog,
        app[SCHEDULER],
        app[BUS],
        app[CLOCK].timestamp,
        random.Random(0),
    )
    assert service._members == rebuilt._members  # the index followed the undone deletes
    [members] = service._members.values()
    assert sorted(members, key=members.__getitem__) == paid  # in the order they were paid


def to_old_format(data_dir: Path) -> None:
    """Rewrite the open days as earlier versions stored them: one document per day listing its
    payments, no entries."""
    with Store.open(data_dir) as store, store.batch():
        days, entries = store.table("settlement_days"), store.table("settlement_entries")
        listed: dict[str, list[str]] = {}
        for entry in sorted(entries.values(), key=lambda e: e["place"]):
            listed.setdefault(entry["dayId"], []).append(entry["transactionId"])
            entries.delete(entry["transactionId"])
        for day in days.values():
            days.put(day["id"], {**day, "transactionIds": listed[day["id"]]})


async def test_a_data_dir_of_an_earlier_version_closes_its_days(
    aiohttp_client: Any, settings: Settings, keys: Keys
) -> None:
    first = Api(await aiohttp_client(create_app(settings)))
    inbox = await subscribe(first, None, ["settlement.closed"])
    await start_of_a_day(first)
    early = await pay(first, keys.sandbox_sk)  # settles on day D
    await first.advance(DAY)
    late = [await pay(first, keys.sandbox_sk) for _ in range(2)]  # day D + 1
    await first.client.close()
    assert settings.data_dir is not None
    to_old_format(settings.data_dir)

    second = Api(await aiohttp_client(create_app(settings)))
    store = second.client.server.app[STORE]
    old_days = store.table("settlement_days").values()
    assert [len(d["transactionIds"]) for d in old_days] == [1, 2]
    # A payment filed under an old day moves its list into entries, once.
    latest = await pay(second, keys.sandbox_sk)
    days = {d["day"]: d for d in store.table("settlement_days").values()}
    assert "transactionIds" in days[min(days)] and "transactionIds" not in days[max(days)]
    assert len(store.table("settlement_entries").values()) == 3
    more = await pay(second, keys.sandbox_sk)
    await second.advance(4 * DAY)
    settled = await closed_settlements(second, inbox["id"])
    assert [s["transactionIds"] for s in settled] == [[early], [*late, latest, more]]
    assert store.table("settlement_days").values() == []
    assert store.table("settlement_entries").values() == []


async def test_filed_payments_survive_a_restart(
    aiohttp_client: Any, settings: Settings, keys: Keys
) -> None:
    first = Api(await aiohttp_client(create_app(settings)))
    inbox = await subscribe(first, None, ["settlement.closed"])
    await start_of_a_day(first)
    before = [await pay(first, keys.sandbox_sk) for _ in range(2)]
    await first.client.close()
    second = Api(await aiohttp_client(create_app(settings)))
    after = await pay(second, keys.sandbox_sk)
    await second.advance(4 * DAY)
    [settlement] = await closed_settlements(second, inbox["id"])
    assert settlement["transactionIds"] == [*before, after]
