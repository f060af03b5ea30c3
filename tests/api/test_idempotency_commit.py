"""An Idempotency-Key's record is part of its operation's own durable commit (issue 18).

The store writes one journal line per commit, and a process killed at any instant leaves whole
lines. So a keyed write is exactly-once across a crash when every line that holds its work also
holds its key: a payment with its key's response; a payout's opening (and debit) with the key's
reservation, and its provider's answer with the key's response. A retry then replays the response
or, for a reservation, finishes the payout the killed server had opened, without a second debit.
The crash itself is exercised with real processes in tests/cli/test_idempotency_crash.py; here the
disk is copied at the instant a kill would hit, which is deterministic.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from simulator.app import create_app
from simulator.domain.catalog import PayoutMethod
from simulator.domain.payouts.provider import Dispatch, SimulatedPayoutProvider
from simulator.http.keys import PAYOUTS
from simulator.settings import Settings
from tests.api.test_payouts import SPEI
from tests.conftest import KEYS, Api, assert_error

PAYOUT = {"methodId": "po_mx_spei", "amount": 500, "recipient": SPEI}
CLOSED_ACCOUNT = {**SPEI, "account": "646180000000000009"}  # the fixture's rejected CLABE
PAYMENT = {"amount": 50, "paymentMethodId": "1001"}


def journal(data_dir: Path) -> list[list[list[Any]]]:
    """The journal's lines, each a list of [table, id, doc] ops."""
    return [orjson.loads(line) for line in (data_dir / "journal.log").read_bytes().splitlines()]


def lines_writing(data_dir: Path, table: str, doc_id: str) -> list[list[list[Any]]]:
    return [line for line in journal(data_dir) if any(op[:2] == [table, doc_id] for op in line)]


def keys_in(line: list[list[Any]]) -> list[dict[str, Any]]:
    return [op[2] for op in line if op[0] == "idempotency"]


class HeldProvider(SimulatedPayoutProvider):
    """The simulated provider, holding each call until released: the instant a kill would hit."""

    def __init__(self) -> None:
        super().__init__()
        self.called = asyncio.Event()
        self.release = asyncio.Event()

    async def dispatch(self, method: PayoutMethod, recipient: dict[str, str]) -> Dispatch:
        self.called.set()
        await self.release.wait()
        return await super().dispatch(method, recipient)


@pytest.fixture
def start(aiohttp_client: Callable[..., Any]) -> Callable[[Path], Any]:
    async def started(data_dir: Path) -> Api:
        settings = Settings(data_dir=data_dir, tick_seconds=0, seed=1234, rate_limit=False)
        return Api(await aiohttp_client(create_app(settings)))

    return started


async def keyed(api: Api, path: str, body: Any, key: str) -> tuple[int, Any, bytes, bool]:
    status, data, response = await api.post(
        path, KEYS.sandbox_sk, json=body, headers={"Idempotency-Key": key}
    )
    replayed = response.headers.get("Idempotent-Replayed") == "true"
    return status, data, await response.read(), replayed


async def fund(api: Api, amount: int = 10_000) -> None:
    body = {"currency": "MXN", "amount": amount}
    status, data, _ = await api.post("/me/payout/fund-sandbox", KEYS.sandbox_sk, json=body)
    assert status == 200, data


async def mxn(api: Api) -> dict[str, Any]:
    status, body, _ = await api.get("/me/payout/balance", KEYS.sandbox_sk)
    assert status == 200, body
    return next(b for b in body["balances"] if b["currency"] == "MXN")


async def payouts(api: Api) -> list[dict[str, Any]]:
    status, body, _ = await api.get("/me/payout/send", KEYS.sandbox_sk)
    assert status == 200, body
    return body["data"]


async def crashed_during_provider_call(
    tmp_path: Path, start: Any, body: dict[str, Any], key: str
) -> tuple[Api, tuple[int, Any, bytes, bool]]:
    """A keyed payout sent on a first server, its data dir copied while the provider call is held
    (what a SIGKILL then would leave: the payout opened and debited, its key reserved), the first
    request then let finish; a second server on the copy, and the first request's answer."""
    first = await start(tmp_path / "first")
    await fund(first)
    held = HeldProvider()
    first.client.server.app[PAYOUTS].provider = held
    request = asyncio.create_task(keyed(first, "/me/payout/send", body, key))
    await asyncio.wait_for(held.called.wait(), 5)
    shutil.copytree(
        tmp_path / "first", tmp_path / "after-crash", ignore=shutil.ignore_patterns("LOCK")
    )
    held.release.set()
    answered = await request
    return await start(tmp_path / "after-crash"), answered


async def test_a_payment_and_its_key_are_one_journal_line(tmp_path: Path, start: Any) -> None:
    api = await start(tmp_path / "data")
    status, tx, raw, _ = await keyed(api, "/payments", PAYMENT, "pay-1")
    assert status == 200, tx
    [line] = lines_writing(tmp_path / "data", "transactions", tx["transactionId"])
    [record] = keys_in(line)
    assert (record["status"], record["body"].encode()) == (200, raw)


async def test_a_payout_reserves_its_key_when_it_debits_and_completes_it_when_it_is_sent(
    tmp_path: Path, start: Any
) -> None:
    api = await start(tmp_path / "data")
    await fund(api)
    status, body, raw, _ = await keyed(api, "/me/payout/send", PAYOUT, "po-1")
    assert status == 200, body
    opened, sent = lines_writing(tmp_path / "data", "payouts", body["payout"]["id"])
    assert any(op[0] == "payout_movements" for op in opened)  # the debit
    [reserved] = keys_in(opened)
    assert reserved["status"] is None and reserved["ref"] == {"payoutId": body["payout"]["id"]}
    [completed] = keys_in(sent)
    assert (completed["id"], completed["status"]) == (reserved["id"], 200)
    assert completed["body"].encode() == raw


async def test_a_retry_after_a_crash_during_the_provider_call_finishes_the_same_payout(
    tmp_path: Path, start: Any
) -> None:
    api, first_answer = await crashed_during_provider_call(tmp_path, start, PAYOUT, "po-crash")
    assert first_answer[0] == 200
    [opened] = await payouts(api)
    assert (opened["status"], opened["providerRef"]) == ("processing", None)
    status, body, raw, replayed = await keyed(api, "/me/payout/send", PAYOUT, "po-crash")
    assert status == 200 and not replayed, body
    assert body["payout"]["id"] == opened["id"]
    assert body["payout"]["providerRef"].startswith("sim_")
    status, _, again, replayed = await keyed(api, "/me/payout/send", PAYOUT, "po-crash")
    assert status == 200 and replayed and again == raw
    assert [p["id"] for p in await payouts(api)] == [opened["id"]]
    balance = await mxn(api)
    assert (balance["available"], balance["reserved"]) == (9_500, 500)  # debited once
    status, error, _, _ = await keyed(api, "/me/payout/send", {**PAYOUT, "amount": 501}, "po-crash")
    assert_error(status, error, 409, "idempotency_conflict")


async def test_a_reserved_payout_the_provider_rejects_on_retry_frees_its_key(
    tmp_path: Path, start: Any
) -> None:
    body = {**PAYOUT, "recipient": CLOSED_ACCOUNT}
    api, _ = await crashed_during_provider_call(tmp_path, start, body, "po-closed")
    status, answer, _, _ = await keyed(api, "/me/payout/send", body, "po-closed")
    error = assert_error(status, answer, 422, "payout_dispatch_failed")
    [failed] = await payouts(api)
    assert failed["status"] == "failed" and error["details"]["payoutId"] == failed["id"]
    assert (await mxn(api))["available"] == 10_000  # the debit was reversed
    # Errors are never kept: a corrected retry under the same key executes afresh.
    status, sent, _, replayed = await keyed(api, "/me/payout/send", PAYOUT, "po-closed")
    assert status == 200 and not replayed, sent
    assert sent["payout"]["id"] != failed["id"]
    assert (await mxn(api))["available"] == 9_500


async def test_concurrent_retries_of_a_reserved_payout_finish_it_once(
    tmp_path: Path, start: Any
) -> None:
    api, _ = await crashed_during_provider_call(tmp_path, start, PAYOUT, "po-race")
    results = await asyncio.gather(
        *(keyed(api, "/me/payout/send", PAYOUT, "po-race") for _ in range(8))
    )
    assert {status for status, *_ in results} == {200}
    assert len({raw for _, _, raw, _ in results}) == 1
    assert sum(not replayed for *_, replayed in results) == 1
    assert len(await payouts(api)) == 1
    assert (await mxn(api))["available"] == 9_500
