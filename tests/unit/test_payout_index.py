"""The payout list's index answers as a walk over every payout would, as payouts change status."""

from __future__ import annotations

from typing import Any

from simulator.domain.payouts.index import PayoutIndex

SCOPE = ("mer_a", "sandbox")


def payout(n: int, status: str = "processing", method: str = "m1", **extra: Any) -> Any:
    return {
        "id": f"P{n:02}",
        "merchantId": "mer_a",
        "environment": "sandbox",
        "status": status,
        "methodId": method,
        "createdAt": float(n // 3),  # equal instants keep the order they were sent in
        **extra,
    }


def walk(rows: list[Any], status: str | None, method: str | None) -> list[str]:
    return [
        row["id"]
        for row in reversed(rows)
        if (status is None or row["status"] == status)
        and (method is None or row["methodId"] == method)
        and (row["merchantId"], row["environment"]) == SCOPE
    ]


def test_pages_by_status_and_method_follow_status_changes_and_forgotten_payouts() -> None:
    rows = [payout(n, method="m1" if n % 3 else "m2") for n in range(20)]
    rows.append(payout(20, merchantId="mer_b"))
    index = PayoutIndex(rows[3:10] + rows[:3])  # stored out of order: sorted by creation
    for row in rows[10:]:
        index.add(row)
    for n in (2, 5, 11, 17):
        rows[n] = {**rows[n], "status": "completed"}
        index.follow(rows[n])
    rows[5] = {**rows[5], "status": "failed"}
    index.follow(rows[5])
    index.forget(rows[8]["id"])
    del rows[8]
    for status in (None, "processing", "completed", "failed"):
        for method in (None, "m1", "m2"):
            expected = walk(rows, status, method)
            for offset, limit in ((0, 100), (1, 2), (len(expected), 5)):
                ids, total = index.page(SCOPE, status, method, limit, offset)
                assert total == len(expected), (status, method)
                assert ids == expected[offset : offset + limit], (status, method, offset)
