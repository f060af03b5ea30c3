"""Transaction records and their indexes: by id, and per (merchant, environment) in creation order.

List filters scan only the caller's own partition, newest first, without touching other tenants.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from simulator.domain.ports import Table


@dataclass(frozen=True, slots=True)
class TransactionFilters:
    shop_id: str | None = None
    status: str | None = None
    payment_method_id: str | None = None
    country: str | None = None
    merchant_order_id: str | None = None
    method: str | None = None

    def matches(self, tx: dict[str, Any]) -> bool:
        if self.shop_id is not None and tx["shopId"] != self.shop_id:
            return False
        if self.status is not None:
            if self.status == "chargeback":
                if not tx.get("chargebackClaimId"):
                    return False
            elif tx["status"] != self.status:
                return False
        if self.payment_method_id is not None and tx["paymentMethodId"] != self.payment_method_id:
            return False
        if self.country is not None and tx["country"] != self.country:
            return False
        if (
            self.merchant_order_id is not None
            and tx.get("merchantOrderId") != self.merchant_order_id
        ):
            return False
        return self.method is None or tx["paymentMethod"] == self.method


class TransactionRepository:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._by_scope: dict[tuple[str, str], list[str]] = defaultdict(list)
        for tx in sorted(table.values(), key=lambda t: t["createdAt"]):
            self._by_scope[(tx["merchantId"], tx["environment"])].append(tx["id"])

    def add(self, tx: dict[str, Any]) -> None:
        self._table.put(tx["id"], tx)
        self._by_scope[(tx["merchantId"], tx["environment"])].append(tx["id"])

    def save(self, tx: dict[str, Any]) -> None:
        self._table.put(tx["id"], tx)

    def get(self, transaction_id: str) -> dict[str, Any] | None:
        return self._table.get(transaction_id)

    def newest_first(self, scope: tuple[str, str]) -> Iterator[dict[str, Any]]:
        table = self._table
        for tx_id in reversed(self._by_scope.get(scope, ())):
            tx = table.get(tx_id)
            if tx is not None:
                yield tx

    def page(
        self, scope: tuple[str, str], filters: TransactionFilters, limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        total = 0
        page: list[dict[str, Any]] = []
        for tx in self.newest_first(scope):
            if filters.matches(tx):
                if offset <= total < offset + limit:
                    page.append(tx)
                total += 1
        return page, total

    def pending(self) -> Iterator[dict[str, Any]]:
        return (tx for tx in self._table.values() if tx["status"] == "pending")
