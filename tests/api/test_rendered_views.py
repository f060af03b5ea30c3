"""GET and list serve transaction views rendered once per stored version: never a stale one.

Every test reads a transaction (so its view is cached), changes what the view depends on (the
document, the clock, the caller's origin, the caller), and reads again.
"""

from __future__ import annotations

from typing import Any

import orjson

from simulator.domain.auth import Principal
from simulator.http.rendered import RenderedTransactions
from simulator.http.responses import offset_page, offset_page_bytes
from simulator.jsonio import dumps
from tests.conftest import KEYS, Api, assert_error

DAY = 86_400


async def _get(api: Api, tx_id: str, key: str = KEYS.sandbox_sk, **kw: Any) -> dict[str, Any]:
    status, body, _ = await api.get(f"/payments/{tx_id}", key, **kw)
    assert status == 200, body
    return body


async def test_a_changed_transaction_is_never_served_from_its_old_rendering(api: Api) -> None:
    tx_id = (await api.pay())["transactionId"]
    assert (await _get(api, tx_id))["status"] == "pending"
    status, _, _ = await api.post(
        f"/payments/{tx_id}/simulate", KEYS.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200
    completed = await _get(api, tx_id)
    assert completed["status"] == "completed"
    assert "completed" in completed["timestamps"]
    await api.advance(3 * DAY)  # the money a refund is paid from becomes available
    status, body, _ = await api.post(
        f"/payments/{tx_id}/refund", KEYS.sandbox_sk, json={"amount": 10}
    )
    assert status == 200, body
    assert (await _get(api, tx_id))["refundedAmount"] > 0


async def test_settlement_status_follows_the_clock_with_no_write_to_the_transaction(
    api: Api,
) -> None:
    tx_id = (await api.pay(amount=100))["transactionId"]
    await api.post(f"/payments/{tx_id}/simulate", KEYS.sandbox_sk, json={"action": "paid"})
    assert (await _get(api, tx_id))["settlement"]["status"] == "pending"
    _, page, _ = await api.get("/payments?status=completed", KEYS.sandbox_sk)
    assert page["data"][0]["settlement"]["status"] == "pending"
    await api.advance(2 * DAY + 60)  # standard tier: T+2
    assert (await _get(api, tx_id))["settlement"]["status"] == "settled"
    _, page, _ = await api.get("/payments?status=completed", KEYS.sandbox_sk)
    assert page["data"][0]["settlement"]["status"] == "settled"


async def test_links_follow_each_callers_origin(api: Api) -> None:
    buyer = {"userName": "Ana Li", "userEmail": "a@b.co", "documentId": "123456789"}
    tx_id = (await api.pay(paymentMethodId="1025", hostedCheckout=True, **buyer))["transactionId"]
    first = await _get(api, tx_id, headers={"Host": "one.example:9000"})
    second = await _get(api, tx_id, headers={"Host": "two.example:9000"})
    assert first["checkoutUrl"].startswith("http://one.example:9000/c/")
    assert second["checkoutUrl"].startswith("http://two.example:9000/c/")


async def test_a_cached_view_is_still_only_shown_to_its_owner(api: Api) -> None:
    tx_id = (await api.pay())["transactionId"]
    await _get(api, tx_id)
    status, body, _ = await api.get(f"/payments/{tx_id}", KEYS.other_sk)
    assert_error(status, body, 404, "transaction_not_found")
    status, body, _ = await api.get(f"/payments/{tx_id}", KEYS.live_sk)
    assert_error(status, body, 404, "transaction_not_found")
    assert (await _get(api, tx_id, KEYS.legacy_sk))["id"] == tx_id  # merchant-wide key


async def test_a_list_page_shows_the_same_views_as_get(api: Api) -> None:
    ids = [(await api.pay(amount=10 + n))["transactionId"] for n in range(5)]
    await _get(api, ids[2])
    _, page, _ = await api.get("/payments?limit=3&offset=1", KEYS.sandbox_sk)
    assert page["pagination"] == {"total": 5, "limit": 3, "offset": 1, "pages": 2}
    assert [row["id"] for row in page["data"]] == ids[::-1][1:4]
    for row in page["data"]:
        assert row == await _get(api, row["id"])


def test_page_bytes_are_the_bytes_of_the_page_document() -> None:
    rows = [{"id": "a", "amount": 1.5}, {"id": "b", "n": None}]
    encoded = offset_page_bytes([dumps(row) for row in rows], 7, 2, 4)
    assert encoded == dumps(offset_page(rows, 7, 2, 4))
    assert offset_page_bytes([], 0, 50, 0) == dumps(offset_page([], 0, 50, 0))


def _tx(tx_id: str, status: str = "pending", **extra: Any) -> bytes:
    doc = {
        "id": tx_id,
        "merchantId": "m",
        "environment": "sandbox",
        "shopId": "s",
        "status": status,
        "amount": "5",
        "amountLocal": "90",
        "currencyLocal": "MXN",
        "paymentMethodId": "1001",
        "paymentMethod": "spei",
        "iconPath": "/static/icons/spei.svg",
        "country": "MEX",
        "fees": {},
        "settlementDelay": "T+1",
        "paymentData": {},
        "tags": [None, None, None],
        "createdAt": 0.0,
        "updatedAt": 0.0,
        **extra,
    }
    return orjson.dumps(doc)


def test_the_rendered_views_are_bounded_oldest_out_first() -> None:
    stored = {f"t{n}": _tx(f"t{n}") for n in range(4)}
    renders = RenderedTransactions(stored.get, lambda: 0.0, capacity=2)
    renders.many(["t0", "t1", "t2"], "http://h")
    assert list(renders._entries) == ["t1", "t2"]
    stored["t1"] = _tx("t1", status="completed")  # a write stores a new bytes object
    (body,) = renders.many(["t1"], "http://h")
    assert orjson.loads(body)["status"] == "completed"
    assert renders.many(["gone"], "http://h") == []


def test_an_unknown_or_foreign_id_is_not_found() -> None:
    stored = {"t0": _tx("t0")}
    renders = RenderedTransactions(stored.get, lambda: 0.0)

    class Caller:
        def can_see(self, record: dict[str, Any] | None) -> bool:
            return Principal.can_see(self, record)  # type: ignore[arg-type]  # Caller has what can_see reads of a Principal

        merchant = type("M", (), {"id": "other"})()
        environment = "sandbox"
        shop = None

    for tx_id in ("t0", "missing"):
        try:
            renders.one(Caller(), tx_id, "http://h")  # type: ignore[arg-type]  # Caller has what one() reads of a Principal
        except Exception as error:
            assert getattr(error, "code", None) == "transaction_not_found"
        else:
            raise AssertionError("expected transaction_not_found")
