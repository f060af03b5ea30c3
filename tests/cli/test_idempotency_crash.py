"""Idempotency-Key across a crash (issue 18): `kill -9` in the middle of a burst of keyed writes.

Each round fires keyed payouts (`POST /me/payout/send`) and keyed payments (`POST /payments`)
concurrently at a real `payorch serve`, SIGKILLs it at a random instant 20-250 ms into the burst,
restarts it on the same data dir and retries every key, twice. Then:

- no key executed twice: one payout per key (its amount is unique) and one payment per key (its
  `merchantOrderId` is the key), and the payout balance is debited once per key;
- every response acknowledged before the kill is replayed byte for byte (`Idempotent-Replayed`);
- nothing acknowledged was lost, and every retry answers 200 (the key's work done exactly once),
  the second retry replaying the first.

Rounds: 5, or PAYORCH_CRASH_ROUNDS (e.g. 30 by hand); the kill instants come from
PAYORCH_CRASH_SEED (random by default, printed with the figures: run with -s to see them).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from tests.api.test_payouts import SPEI

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]
SANDBOX_SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"
ROUNDS = int(os.environ.get("PAYORCH_CRASH_ROUNDS", "5"))
SEED = int(os.environ.get("PAYORCH_CRASH_SEED", str(random.randrange(2**32))))
PAYOUTS, PAYMENTS = 150, 75
KILL_WINDOW = (0.020, 0.250)
FUNDED = Decimal(100_000_000)  # MXN: far more than the payouts of hundreds of rounds
API = "/api/v1"
HEADERS = {"Authorization": f"Bearer {SANDBOX_SK}"}


class Server:
    """`payorch serve --port 0` on a data dir, as a user runs it."""

    def __init__(self, data_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir), "--no-rate-limit"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://"), line
        self.url = line.split()[-1]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


@dataclass(frozen=True)
class Keyed:
    key: str
    path: str
    body: dict[str, Any]


@dataclass
class Figures:
    rounds: int = 0
    kills: int = 0
    acknowledged: int = 0
    duplicate_payouts: int = 0  # executions beyond the first, per key
    duplicate_payments: int = 0
    double_debited: Decimal = Decimal(0)  # MXN debited beyond once per key
    replay_mismatches: int = 0  # acknowledged, then answered differently on retry
    replayed_unacknowledged: int = 0  # done before the kill, its answer lost: replayed on retry
    resumed: int = 0  # a payout opened before the kill, its provider call not: finished on retry
    failed: list[str] = field(default_factory=list)  # an answer other than 200, or no replay


async def post(session: aiohttp.ClientSession, url: str, req: Keyed) -> tuple[int, bytes, bool]:
    headers = {**HEADERS, "Idempotency-Key": req.key}
    async with session.post(url + API + req.path, json=req.body, headers=headers) as response:
        raw = await response.read()
        return response.status, raw, response.headers.get("Idempotent-Replayed") == "true"


async def get(session: aiohttp.ClientSession, url: str, path: str) -> Any:
    async with session.get(url + API + path, headers=HEADERS) as response:
        assert response.status == 200, await response.text()
        return orjson.loads(await response.read())


async def every(session: aiohttp.ClientSession, url: str, path: str) -> list[dict[str, Any]]:
    """Every row of a paginated list."""
    rows: list[dict[str, Any]] = []
    while True:
        page = await get(session, url, f"{path}?limit=100&offset={len(rows)}")
        items = page.get("data", page.get("items", []))
        rows += items
        if not items or len(rows) >= page["pagination"]["total"]:
            return rows


def round_requests(number: int) -> list[Keyed]:
    """Payouts with an amount unique to their key (in MXN cents), payments named by their key;
    interleaved, as concurrent clients would send them."""
    payouts = [
        Keyed(
            f"r{number}-po-{i}",
            "/me/payout/send",
            {
                "methodId": "po_mx_spei",
                "amount": round(200 + 2 * number + i / 100, 2),
                "recipient": SPEI,
            },
        )
        for i in range(PAYOUTS)
    ]
    payments = [
        Keyed(
            f"r{number}-pay-{i}",
            "/payments",
            {"amount": 10, "paymentMethodId": "1001", "merchantOrderId": f"r{number}-pay-{i}"},
        )
        for i in range(PAYMENTS)
    ]
    mixed = [*payouts, *payments]
    random.Random(number).shuffle(mixed)
    return mixed


async def burst(url: str, requests: list[Keyed], server: Server, kill_after: float) -> dict:
    """Fire every request at once; SIGKILL the server `kill_after` seconds in. The answers
    received before the kill, by key."""
    acknowledged: dict[str, tuple[int, bytes]] = {}
    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(req: Keyed) -> None:
            try:
                status, raw, _ = await post(session, url, req)
            except (TimeoutError, aiohttp.ClientError):
                return  # cut off by the kill: never acknowledged
            acknowledged[req.key] = (status, raw)

        tasks = [asyncio.create_task(one(req)) for req in requests]
        await asyncio.sleep(kill_after)
        server.kill()
        await asyncio.gather(*tasks)
    return acknowledged


async def check_round(
    url: str, number: int, requests: list[Keyed], acknowledged: dict, figures: Figures
) -> None:
    """Retry every key twice on the restarted server, then count what each key executed."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as session:
        opened = {p["id"] for p in await every(session, url, "/me/payout/send")}
        first = await asyncio.gather(*(post(session, url, req) for req in requests))
        second = await asyncio.gather(*(post(session, url, req) for req in requests))
        for req, (status, raw, replayed), (status_2, raw_2, replayed_2) in zip(
            requests, first, second, strict=True
        ):
            if status != 200 or (status_2, raw_2, replayed_2) != (200, raw, True):
                figures.failed.append(f"retry of {req.key}: {status} {raw[:200]!r}")
                continue
            if replayed and req.key not in acknowledged:
                figures.replayed_unacknowledged += 1
            if not replayed and orjson.loads(raw).get("payout", {}).get("id") in opened:
                figures.resumed += 1
            if req.key in acknowledged:
                ack_status, ack_raw = acknowledged[req.key]
                if ack_status != 200:
                    figures.failed.append(f"{req.key}: {ack_status} {ack_raw[:200]!r}")
                figures.replay_mismatches += raw != ack_raw
        amounts = Counter(
            Decimal(str(p["amount"])) for p in await every(session, url, "/me/payout/send")
        )
        mine = [Decimal(str(r.body["amount"])) for r in requests if r.path == "/me/payout/send"]
        figures.duplicate_payouts += sum(max(amounts[a] - 1, 0) for a in mine)
        orders = Counter(p.get("merchantOrderId") for p in await every(session, url, "/payments"))
        figures.duplicate_payments += sum(
            max(orders[r.key] - 1, 0) for r in requests if r.path == "/payments"
        )
        # Debited once per payout key, over every round so far (each key has executed by now).
        balances = (await get(session, url, "/me/payout/balance"))["balances"]
        [mxn] = [b for b in balances if b["currency"] == "MXN"]
        spent = sum(
            Decimal(str(r.body["amount"]))
            for n in range(number + 1)
            for r in round_requests(n)
            if r.path == "/me/payout/send"
        )
        debited = FUNDED - Decimal(str(mxn["available"]))
        figures.double_debited = debited - spent


@pytest.mark.long(9)
async def test_a_crash_mid_burst_never_executes_a_key_twice(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    pick = random.Random(SEED)
    figures = Figures()
    server = Server(data_dir)
    try:
        async with aiohttp.ClientSession() as session:
            fund = Keyed("", "/me/payout/fund-sandbox", {"currency": "MXN", "amount": int(FUNDED)})
            async with session.post(
                server.url + API + fund.path, json=fund.body, headers=HEADERS
            ) as response:
                assert response.status == 200, await response.text()
        for number in range(ROUNDS):
            requests = round_requests(number)
            acknowledged = await burst(server.url, requests, server, pick.uniform(*KILL_WINDOW))
            figures.rounds += 1
            figures.kills += 1
            figures.acknowledged += len(acknowledged)
            server = Server(data_dir)
            await check_round(server.url, number, requests, acknowledged, figures)
    finally:
        server.kill()
    print(f"\ncrash rounds (seed {SEED}): {figures}")
    assert figures.duplicate_payouts == figures.duplicate_payments == 0, figures
    assert figures.double_debited == 0, figures
    assert figures.replay_mismatches == 0, figures
    assert not figures.failed, figures
