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


def reference(rows: list[dict[str, Any]], **filters: Any) -> list[str]:
    """What a walk over every row answers, newest first (the lists' specification)."""
    fields = {
        "status": "status",
        "payment_method_id": "paymentMethodId",
        "country": "country",
        "merchant_order_id": "merchantOrderId",
        "method": "paymentMethod",
        "shop_id": "shopId",
    }
    newest = sorted(rows, key=lambda row: (row["createdAt"], row["id"]), reverse=True)
    return [
        row["id"]
        for row in newest
        if all(row[fields[name]] == value for name, value in filters.items())
    ]


def test_method_country_slug_and_order_filters_answer_as_a_walk_over_every_row(
    store: Store,
) -> None:
    repo = TransactionRepository(store.table("transactions"))
    kinds = [("1001", "MEX", "spei"), ("1002", "MEX", "oxxo"), ("1006", "BRA", "pix")]
    rows = []
    for n in range(30):
        method_id, country, slug = kinds[n % 3 if n % 7 else 0]
        row = tx(
            f"T{n:02}",
            float(n // 2),  # equal instants: the id orders them
            "completed" if n % 4 == 0 else "pending",
            paymentMethodId=method_id,
            country=country,
            paymentMethod=slug,
            merchantOrderId=f"order-{n % 5}",
            shopId="shp_a" if n % 2 else "shp_b",
        )
        repo.add(row)
        rows.append(row)
    cases: list[dict[str, Any]] = [
        {"country": "MEX"},
        {"payment_method_id": "1001", "country": "MEX"},
        {"payment_method_id": "1001", "country": "BRA"},
        {"method": "pix", "status": "pending"},
        {"country": "MEX", "shop_id": "shp_a", "status": "completed"},
        {"merchant_order_id": "order-3"},
        {"merchant_order_id": "order-3", "country": "MEX", "status": "pending"},
        {"merchant_order_id": "nobody's"},
    ]
    for filters in cases:
        assert ids(repo, **filters) == reference(rows, **filters), filters
    # Pages of a merge of several split lists: sliced from the same order.
    whole = reference(rows, country="MEX")
    for offset in (0, 3, 17, len(whole) - 1, len(whole) + 5):
        page, total = repo.page_ids(SCOPE, TransactionFilters(country="MEX"), 4, offset)
        assert total == len(whole) and page == whole[offset : offset + 4]


def test_a_rolled_back_write_leaves_the_split_lists_and_order_ids_as_the_store(
    store: Store,
) -> None:
    table = store.table("transactions")
    repo = TransactionRepository(table)
    table.on_rollback(repo.reindex)
    repo.add(tx("T0", 0.0, merchantOrderId="o-1"))
    with pytest.raises(RuntimeError), store.batch():
        repo.save(tx("T0", 0.0, "completed", merchantOrderId="o-1"))
        repo.add(tx("T1", 1.0, merchantOrderId="o-1", paymentMethodId="1002"))
        raise RuntimeError("fail after the writes")
    assert ids(repo, merchant_order_id="o-1") == ["T0"]
    assert ids(repo, payment_method_id="1002") == []
    assert ids(repo, country="MEX", status="completed") == []
    assert ids(repo, country="MEX", status="pending") == ["T0"]
    reopened = TransactionRepository(table)
    assert ids(reopened, merchant_order_id="o-1", country="MEX") == ["T0"]
