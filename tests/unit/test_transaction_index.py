"""The transaction indexes follow every write, including writes a failed batch undoes."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.domain.transactions import TransactionFilters, TransactionRepository
from simulator.store import Store

SCOPE = ("mer_a", "sandbox")


def tx(tx_id: str, created: float, status: str = "pending", **extra: Any) -> dict[str, Any]:
    return {
        "id": tx_id,
        "merchantId": "mer_a",
        "environment": "sandbox",
        "shopId": "shp_a",
        "status": status,
        "paymentMethodId": "1001",
        "country": "MEX",
        "merchantOrderId": None,
        "paymentMethod": "spei",
        "createdAt": created,
        "chargebackClaimId": None,
        **extra,
    }


def ids(repo: TransactionRepository, **filters: Any) -> list[str]:
    page, total = repo.page(SCOPE, TransactionFilters(**filters), 100, 0)
    assert total == len(page)
    return [row["id"] for row in page]


@pytest.fixture
def store() -> Store:
    return Store.memory()


def test_status_moves_between_indexes_and_order_is_newest_first(store: Store) -> None:
    repo = TransactionRepository(store.table("transactions"))
    for n in range(3):
        repo.add(tx(f"T{n}", float(n)))
    done = tx("T1", 1.0, "completed")
    repo.save(done)
    assert ids(repo) == ["T2", "T1", "T0"]
    assert ids(repo, status="completed") == ["T1"]
    assert ids(repo, status="pending") == ["T2", "T0"]
    repo.save({**done, "chargebackClaimId": "CLM-1"})
    assert ids(repo, status="chargeback") == ["T1"]
    assert ids(repo, shop_id="shp_a", status="completed", country="MEX") == ["T1"]
    assert ids(repo, shop_id="other") == []


def test_paging_slices_the_index(store: Store) -> None:
    repo = TransactionRepository(store.table("transactions"))
    for n in range(10):
        repo.add(tx(f"T{n}", float(n)))
    page, total = repo.page(SCOPE, TransactionFilters(), 3, 2)
    assert total == 10 and [row["id"] for row in page] == ["T7", "T6", "T5"]
    page, total = repo.page(SCOPE, TransactionFilters(), 3, 9)
    assert [row["id"] for row in page] == ["T0"]


def test_a_rolled_back_batch_leaves_the_index_as_the_store(store: Store) -> None:
    table = store.table("transactions")
    repo = TransactionRepository(table)
    table.on_rollback(repo.reindex)
    repo.add(tx("T0", 0.0))
    with pytest.raises(RuntimeError), store.batch():
        repo.save(tx("T0", 0.0, "completed"))
        repo.add(tx("T1", 1.0))
        raise RuntimeError("fail after the writes")
    assert ids(repo) == ["T0"]
    assert ids(repo, status="completed") == []
    assert ids(repo, status="pending") == ["T0"]


def test_reopened_repository_rebuilds_the_indexes(store: Store) -> None:
    table = store.table("transactions")
    first = TransactionRepository(table)
    first.add(tx("T0", 0.0, "completed"))
    first.add(tx("T1", 1.0))
    second = TransactionRepository(table)
    assert ids(second, status="completed") == ["T0"]
    assert ids(second) == ["T1", "T0"]
