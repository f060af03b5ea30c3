"""The pay-in ledger's running totals read exactly what summing every movement reads.

The reference below is the ledger's original derivation (every movement decoded and summed on
each read), kept here verbatim so that the totals are checked against it, not against themselves:
the same Decimal sums, reserve schedule (order included), latest movements and warnings, at any
`now` (later than every read before, earlier, or before everything), across records, rollbacks of
failed store batches, and a restart.
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from simulator.clock import isoformat
from simulator.domain import account, ledger
from simulator.domain.ledger import (
    AVAILABLE,
    FROZEN,
    RESERVE,
    RESERVE_SCHEDULE_SHOWN,
    Balance,
    Ledger,
)
from simulator.domain.money import ZERO, dec
from simulator.jsonio import to_json_number
from simulator.store import Store

SCOPE = ("mer_a", "sandbox")
OTHER = ("mer_b", "sandbox")
T0 = 1_800_000_000.0
DAY = 86_400.0
KINDS = (
    "payment",
    "fee_platform",
    "fee_processing",
    "reserve_hold",
    "reserve_release",
    "refund",
    "refund_hold",
    "refund_paid",
    "chargeback_hold",
    "chargeback_paid",
    "chargeback_fee",
    "uncovered_refund",
    "uncovered_chargeback",
    "payout_transfer",
    "withdrawal",
)


def reference(movements: list[dict[str, Any]], now: float) -> Balance:
    """The original `Ledger.balance`: every movement of the scope, decoded and summed."""
    result = Balance()
    for movement in movements:
        amount = dec(movement["amount"])
        kind, bucket = movement["type"], movement["bucket"]
        if movement["effectiveAt"] <= now:
            if bucket == AVAILABLE:
                result.available += amount
            elif bucket == RESERVE:
                result.reserve += amount
            else:
                result.frozen += amount
        else:
            result.pending += amount
            if kind == "reserve_release" and bucket == AVAILABLE:
                result.reserve_schedule.append(
                    {"amount": amount, "releaseAt": movement["effectiveAt"]}
                )
        if kind == "payment":
            result.gross_volume += amount
        elif kind == "fee_platform":
            result.platform_fees -= amount
        elif kind == "fee_processing":
            result.flat_fees -= amount
        elif kind == "chargeback_fee":
            result.chargeback_fees -= amount
        elif kind in ("refund", "refund_hold") and bucket == AVAILABLE:
            result.refunds -= amount
        elif kind == "chargeback_paid":
            result.chargebacks -= amount
    result.reserve_schedule.sort(key=lambda item: item["releaseAt"])
    # As GET /me/balance shows them: a JSON number and the ISO instant.
    result.reserve_schedule = [
        {"amount": to_json_number(item["amount"]), "releaseAt": isoformat(item["releaseAt"])}
        for item in result.reserve_schedule[:RESERVE_SCHEDULE_SHOWN]
    ]
    return result


def reference_available(movements: list[dict[str, Any]], now: float) -> Decimal:
    total = ZERO
    for movement in movements:
        if movement["bucket"] == AVAILABLE and movement["effectiveAt"] <= now:
            total += dec(movement["amount"])
    return total


def reference_settling(movements: list[dict[str, Any]], tx_id: str, at: float) -> Decimal:
    total = ZERO
    for movement in movements:
        if (
            movement["transactionId"] == tx_id
            and movement["bucket"] == AVAILABLE
            and movement["effectiveAt"] == at
        ):
            total += dec(movement["amount"])
    return max(total, ZERO)


def stored(store: Store, scope: tuple[str, str]) -> list[dict[str, Any]]:
    """The scope's movements as the store holds them, in record order."""
    return [
        m for m in store.table("movements").values() if (m["merchantId"], m["environment"]) == scope
    ]


def check(book: Ledger, store: Store, now: float, tx_ids: list[str]) -> None:
    for scope in (SCOPE, OTHER):
        movements = stored(store, scope)
        got, want = book.balance(scope, now), reference(movements, now)
        for name in Balance.__slots__:  # type: ignore[attr-defined]  # a slots dataclass has __slots__ at run time
            if name != "movements":
                assert getattr(got, name) == getattr(want, name), (name, now)
        assert book.available(scope, now) == reference_available(movements, now)
        assert book.movements(scope) == movements
        assert book.latest(scope, 7) == movements[-7:]
        assert book.latest(scope, 0) == []
        assert book.warnings(scope) == [m for m in movements if m["type"] in ledger.WARNING_TYPES]
        for tx_id in tx_ids[-5:]:
            for at in {m["effectiveAt"] for m in movements if m["transactionId"] == tx_id}:
                expected = reference_settling(movements, tx_id, at)
                assert book.settling(scope, tx_id, at) == expected


def random_record(book: Ledger, rng: random.Random, clock: float, tx_ids: list[str]) -> None:
    if not tx_ids or rng.random() < 0.3:
        tx_ids.append(f"tx_{len(tx_ids)}")
    kind = rng.choice(KINDS)
    bucket = rng.choice((AVAILABLE, AVAILABLE, RESERVE, FROZEN))
    amount = Decimal(rng.randint(-5000, 5000)).scaleb(-2) if "uncovered" not in kind else ZERO
    effective_at = clock + rng.choice((0.0, 0.0, 1.0, -1.0, DAY, 2 * DAY, 60 * DAY, -2 * DAY))
    book.record(
        rng.choice((SCOPE, SCOPE, OTHER)),
        kind,
        amount,
        bucket,
        effective_at=effective_at,
        now=clock,
        transaction_id=rng.choice((None, *tx_ids[-3:])),
    )


class Boom(Exception):
    pass


@pytest.mark.parametrize("seed", range(12))
def test_totals_match_the_sum_of_every_movement(seed: int) -> None:
    rng = random.Random(seed)
    store = Store.memory()
    clock = T0
    book = Ledger(store.table("movements"), lambda: clock)
    store.table("movements").on_rollback(book.follow_rollback)
    tx_ids: list[str] = []
    for _ in range(60):
        step = rng.random()
        if step < 0.5:
            random_record(book, rng, clock, tx_ids)
        elif step < 0.65:
            # A batch that fails after recording: its movements vanish from every total.
            with pytest.raises(Boom), store.batch():
                for _ in range(rng.randint(1, 4)):
                    random_record(book, rng, clock, tx_ids)
                raise Boom
        elif step < 0.75:
            # A nested batch fails, the outer one carries on and commits.
            with store.batch():
                random_record(book, rng, clock, tx_ids)
                with pytest.raises(Boom), store.batch():
                    random_record(book, rng, clock, tx_ids)
                    random_record(book, rng, clock, tx_ids)
                    raise Boom
                random_record(book, rng, clock, tx_ids)
        else:
            clock += rng.choice((1.0, 600.0, DAY, 3 * DAY, 61 * DAY))
        # Mostly now; sometimes a little or far in the past (a clock stepped back) or ahead.
        for now in (clock, clock - 5.0, clock - 3 * DAY, clock + 2 * DAY, T0 - DAY):
            if now == clock or rng.random() < 0.3:
                check(book, store, now, tx_ids)
    check(book, store, clock, tx_ids)
    # A restart builds the same totals in one pass over what is stored.
    check(Ledger(store.table("movements"), lambda: clock), store, clock, tx_ids)
    check(Ledger(store.table("movements")), store, clock - DAY, tx_ids)


def test_a_rollback_larger_than_what_is_remembered_rebuilds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ledger, "REMEMBERED", 3)
    store = Store.memory()
    book = Ledger(store.table("movements"), lambda: T0)
    store.table("movements").on_rollback(book.follow_rollback)
    record = {"effective_at": T0, "now": T0, "transaction_id": "tx_1"}
    book.record(SCOPE, "payment", Decimal("10.00"), AVAILABLE, **record)
    with pytest.raises(Boom), store.batch():
        for _ in range(5):
            book.record(SCOPE, "payment", Decimal("1.25"), AVAILABLE, **record)
        raise Boom
    assert book.available(SCOPE, T0) == Decimal("10.00")
    book.record(SCOPE, "uncovered_refund", ZERO, AVAILABLE, **record)
    check(book, store, T0, ["tx_1"])
    assert [m["type"] for m in book.warnings(SCOPE)] == ["uncovered_refund"]


def test_the_reserve_schedule_keeps_release_order_and_record_order_on_ties() -> None:
    store = Store.memory()
    book = Ledger(store.table("movements"))
    for amount, days in (("3.00", 60), ("1.00", 30), ("2.00", 60), ("4.00", 30)):
        book.record(
            SCOPE,
            "reserve_release",
            Decimal(amount),
            AVAILABLE,
            effective_at=T0 + days * DAY,
            now=T0,
        )
    schedule = book.balance(SCOPE, T0).reserve_schedule
    assert schedule == reference(stored(store, SCOPE), T0).reserve_schedule
    assert [item["amount"] for item in schedule] == [1, 4, 3, 2]
    assert [item["amount"] for item in book.balance(SCOPE, T0 + 30 * DAY).reserve_schedule] == [
        3,
        2,
    ]
    # Read earlier again (within the recent window, then before it): all four are back.
    assert len(book.balance(SCOPE, T0 + 30 * DAY - 1).reserve_schedule) == 4
    assert len(book.balance(SCOPE, T0).reserve_schedule) == 4


def test_an_unknown_scope_reads_zero() -> None:
    book = Ledger(Store.memory().table("movements"))
    assert book.balance(SCOPE, T0) == Balance()
    assert book.available(SCOPE, T0) == ZERO
    assert book.settling(SCOPE, "tx_1", T0) == ZERO
    assert book.movements(SCOPE) == book.latest(SCOPE) == book.warnings(SCOPE) == []


def test_the_ledger_and_the_balance_view_agree_on_what_a_warning_is() -> None:
    assert set(account.WARNING_TYPES) == ledger.WARNING_TYPES


def test_the_reserve_schedule_shows_the_next_hundred_releases() -> None:
    """A busy shop has a release per paid payment: the balance lists the soonest 100 (as it
    lists the newest 100 movements), the same on the running totals and from the movements."""
    store = Store.memory()
    book = Ledger(store.table("movements"))
    for hour in range(250, 0, -1):  # recorded latest first: the schedule still sorts them
        book.record(
            SCOPE,
            "reserve_release",
            Decimal(hour),
            AVAILABLE,
            effective_at=T0 + hour * 3600,
            now=T0,
        )
    schedule = book.balance(SCOPE, T0).reserve_schedule
    assert len(schedule) == RESERVE_SCHEDULE_SHOWN == 100
    assert [item["amount"] for item in schedule] == list(range(1, 101))
    assert schedule == reference(stored(store, SCOPE), T0).reserve_schedule
    # Once the first 200 have landed, the last 50 are all that is ahead.
    later = book.balance(SCOPE, T0 + 200 * 3600).reserve_schedule
    assert [item["amount"] for item in later] == list(range(201, 251))
