"""Payout catalog and balance through the HTTP API: methods, currencies, balance, fund-sandbox,
transfer (from the pay-in balance, atomically) and swap (quote and execute).

Helpers here are shared by the other payout test modules.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest

from simulator.http.keys import CONTEXT
from tests.conftest import KEYS, Api, Keys, assert_error

DAY = 86_400
SYNTHETIC = ["sbx_po_mx_spei", "sbx_po_br_pix", "sbx_po_co_bank", "sbx_po_pe_bank"]

# A valid recipient for each real rail (check digits included).
SPEI = {
    "name": "Ana López",
    "account": "012180001183597198",
    "documentType": "RFC",
    "documentId": "IXLZ9511197B1",
}
PIX = {
    "name": "João Silva",
    "account": "52998224725",
    "accountType": "CPF",
    "documentId": "52998224725",
}
CO_BANK = {
    "name": "Carlos Pérez",
    "bankCode": "007",
    "account": "1234567890",
    "accountType": "SAVINGS",
    "documentId": "1020304050",
}
CL_BANK = {
    "name": "Camila Rojas",
    "bankCode": "012",
    "account": "12345678",
    "accountType": "CHECKING",
    "documentId": "123456785",
}
PE_BANK = {
    "name": "Lucía Quispe",
    "bankCode": "002",
    "account": "00219300123456789012",
    "accountType": "SAVINGS",
    "documentId": "12345678",
}
AR_BANK = {"name": "Martín Gómez", "account": "2850590940090418135201", "documentId": "12345678"}
NEQUI = {"name": "Carlos Pérez", "account": "3001234567", "documentId": "1020304050"}
YAPE = {"name": "Lucía Quispe", "account": "987654321", "documentId": "12345678"}
WALLET = {"name": "Jane Doe", "account": "jane@example.com", "documentId": "P1234567"}
RECIPIENTS = {
    "po_mx_spei": SPEI,
    "po_br_pix": PIX,
    "po_co_bank": CO_BANK,
    "po_cl_bank": CL_BANK,
    "po_pe_bank": PE_BANK,
    "po_ar_bank": AR_BANK,
    "po_co_nequi": NEQUI,
    "po_pe_yape": YAPE,
    "po_us_email_wallet": WALLET,
    "sbx_po_mx_spei": SPEI,
    "sbx_po_br_pix": PIX,
    "sbx_po_co_bank": CO_BANK,
    "sbx_po_pe_bank": PE_BANK,
}


def d(value: Any) -> Decimal:
    return Decimal(str(value))


async def fund(api: Api, currency: str, amount: float, key: str = KEYS.sandbox_sk) -> Any:
    status, body, _ = await api.post(
        "/me/payout/fund-sandbox", key, json={"currency": currency, "amount": amount}
    )
    assert status == 200, body
    return body


async def balances(api: Api, key: str = KEYS.sandbox_sk) -> dict[str, dict[str, Decimal]]:
    status, body, _ = await api.get("/me/payout/balance", key)
    assert status == 200, body
    return {
        entry["currency"]: {k: d(v) for k, v in entry.items() if k != "currency"}
        for entry in body["balances"]
    }


async def payin_balance(api: Api, key: str = KEYS.sandbox_sk) -> dict[str, Decimal]:
    status, body, _ = await api.get("/me/balance", key)
    assert status == 200, body
    return {k: d(v) for k, v in body["balance"].items()}


async def settled_payin(api: Api, amount: float = 100) -> Decimal:
    """A paid, settled pay-in; returns the pay-in available balance after it."""
    tx = await api.pay(amount=amount)
    status, body, _ = await api.post(
        f"/payments/{tx['transactionId']}/simulate", KEYS.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200, body
    await api.advance(3 * DAY)  # past mercadoazul's T+2
    return (await payin_balance(api))["available"]


# ---------------------------------------------------------------------------- methods


async def test_sandbox_methods_start_with_the_synthetic_rails(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/payout/methods", keys.sandbox_sk)
    assert status == 200, body
    ids = [item["id"] for item in body["items"]]
    assert ids[:4] == SYNTHETIC
    assert {"po_mx_spei", "po_br_pix", "po_co_bank", "po_cl_bank", "po_pe_bank"} <= set(ids)
    assert {"po_ar_bank", "po_co_nequi", "po_pe_yape", "po_us_email_wallet"} <= set(ids)
    spei = next(item for item in body["items"] if item["id"] == "po_mx_spei")
    assert set(spei) == {
        "id",
        "name",
        "currency",
        "country",
        "rail",
        "minUsd",
        "maxUsd",
        "logoUrl",
        "iconUrl",
        "funded",
        "currencyAvailable",
        "recipientFields",
    }
    assert spei["currency"] == "MXN" and spei["country"] == "MX" and spei["rail"] == "spei"
    assert spei["iconUrl"] == spei["logoUrl"] and spei["iconUrl"].endswith("/static/icons/spei.svg")
    assert spei["funded"] is False and spei["currencyAvailable"] == 0
    keys_ = [f["key"] for f in spei["recipientFields"]]
    assert keys_ == ["name", "account", "documentType", "documentId", "email"]
    for entry in spei["recipientFields"]:
        assert set(entry) - {"options"} == {"key", "label", "required", "type"}
        assert ("options" in entry) == (entry["type"] == "select")
    co = next(item for item in body["items"] if item["id"] == "po_co_bank")
    bank = next(f for f in co["recipientFields"] if f["key"] == "bankCode")
    assert {o["value"] for o in bank["options"]} >= {"007", "001"}


async def test_every_method_icon_resolves(api: Api, keys: Keys) -> None:
    _, body, _ = await api.get("/me/payout/methods", keys.sandbox_sk)
    for item in body["items"]:
        path = item["iconUrl"].split("://", 1)[1].split("/", 1)[1]
        response = await api.client.get("/" + path)
        assert response.status == 200, item["iconUrl"]


async def test_production_lists_no_synthetic_rail(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/payout/methods", keys.live_sk)
    assert status == 200, body
    ids = [item["id"] for item in body["items"]]
    assert ids and not any(i.startswith("sbx_") for i in ids)


async def test_funded_and_currency_available_follow_the_balance(api: Api, keys: Keys) -> None:
    await fund(api, "MXN", 500)
    _, body, _ = await api.get("/me/payout/methods", keys.sandbox_sk)
    by_id = {item["id"]: item for item in body["items"]}
    assert by_id["po_mx_spei"]["funded"] is True
    assert by_id["po_mx_spei"]["currencyAvailable"] == 500
    assert by_id["po_br_pix"]["funded"] is False
    # A synthetic rail debits nothing, so it can always send.
    assert by_id["sbx_po_br_pix"]["funded"] is True


async def test_payout_endpoints_need_a_secret_key(api: Api, keys: Keys) -> None:
    for path in ("/me/payout/methods", "/me/payout/currencies", "/me/payout/balance"):
        status, body, _ = await api.get(path, keys.sandbox_pk)
        assert_error(status, body, 403, "key_kind_not_allowed")
        status, body, _ = await api.get(path)
        assert_error(status, body, 401, "missing_credentials")


# ---------------------------------------------------------------------------- currencies


async def test_currencies_are_sorted_with_usd_first(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/payout/currencies", keys.sandbox_sk)
    assert status == 200, body
    codes = [entry["currency"] for entry in body["currencies"]]
    assert codes[0] == "USD"
    assert codes[1:] == sorted(codes[1:])
    assert {"MXN", "BRL", "COP", "CLP", "PEN", "ARS"} <= set(codes)
    by_code = {entry["currency"]: entry for entry in body["currencies"]}
    assert set(by_code["MXN"]) == {"currency", "country", "funded", "available", "rails"}
    assert by_code["MXN"]["country"] == "MX"
    rails = {rail["id"] for rail in by_code["MXN"]["rails"]}
    assert rails == {"sbx_po_mx_spei", "po_mx_spei"}  # sandbox's synthetic rail included
    assert {"id", "rail", "country"} == set(by_code["COP"]["rails"][0])
    status, live, _ = await api.get("/me/payout/currencies", keys.live_sk)
    live_mxn = next(entry for entry in live["currencies"] if entry["currency"] == "MXN")
    assert [rail["id"] for rail in live_mxn["rails"]] == ["po_mx_spei"]


async def test_currencies_show_funding(api: Api, keys: Keys) -> None:
    await fund(api, "COP", 100_000)
    _, body, _ = await api.get("/me/payout/currencies", keys.sandbox_sk)
    by_code = {entry["currency"]: entry for entry in body["currencies"]}
    assert by_code["COP"]["funded"] is True and by_code["COP"]["available"] == 100_000
    assert by_code["USD"]["funded"] is False and by_code["USD"]["available"] == 0


# ---------------------------------------------------------------------------- balance and fund


async def test_balance_starts_with_an_empty_usd_entry(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/payout/balance", keys.sandbox_sk)
    assert status == 200, body
    assert body == {
        "merchantId": "mer_mercadoazul",
        "environment": "sandbox",
        "balances": [{"currency": "USD", "available": 0, "pending": 0, "reserved": 0}],
    }


async def test_fund_sandbox_credits_the_available_balance(api: Api) -> None:
    body = await fund(api, "MXN", 1234.5)
    assert body["currency"] == "MXN" and body["amount"] == 1234.5
    assert body["balances"] == [
        {"currency": "USD", "available": 0, "pending": 0, "reserved": 0},
        {"currency": "MXN", "available": 1234.5, "pending": 0, "reserved": 0},
    ]
    await fund(api, "MXN", 0.5)
    await fund(api, "BRL", 10)
    assert [c for c in await balances(api)] == ["USD", "BRL", "MXN"]
    assert (await balances(api))["MXN"]["available"] == d("1235")


async def test_balances_are_per_merchant_and_environment(api: Api, keys: Keys) -> None:
    await fund(api, "USD", 50)
    assert (await balances(api, keys.other_sk))["USD"]["available"] == 0
    assert (await balances(api, keys.live_sk))["USD"]["available"] == 0
    # The merchant-wide key sees the same merchant's balance.
    assert (await balances(api, keys.legacy_sk))["USD"]["available"] == 50


async def test_fund_sandbox_is_refused_in_production(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/me/payout/fund-sandbox", keys.live_sk, json={"currency": "USD", "amount": 10}
    )
    assert_error(status, body, 400, "fund_sandbox_only")
    status, body, _ = await api.post(
        "/me/payout/fund-sandbox", keys.sandbox_pk, json={"currency": "USD", "amount": 10}
    )
    assert_error(status, body, 403, "key_kind_not_allowed")


@pytest.mark.parametrize(
    ("payload", "status", "code", "param"),
    [
        ({"currency": "USD", "amount": 0}, 422, "amount_invalid", "amount"),
        ({"currency": "USD", "amount": -5}, 422, "amount_invalid", "amount"),
        ({"currency": "USD", "amount": "10"}, 422, "amount_invalid", "amount"),
        ({"currency": "USD", "amount": 1.001}, 422, "amount_invalid", "amount"),
        ({"currency": "CLP", "amount": 10.5}, 422, "amount_invalid", "amount"),
        ({"currency": "USD", "amount": 1e30}, 422, "amount_invalid", "amount"),
        ({"currency": "USD"}, 400, "missing_field", "amount"),
        ({"amount": 10}, 400, "missing_field", "currency"),
        ({"currency": "EUR", "amount": 10}, 400, "invalid_request", "currency"),
        ({"currency": "usdx", "amount": 10}, 400, "invalid_request", "currency"),
        ({"currency": "usd", "amount": 10}, 400, "invalid_request", "currency"),
        ({"currency": "", "amount": 10}, 400, "invalid_request", "currency"),
        ({"currency": "USD", "amount": 10, "extra": 1}, 400, "invalid_request", "extra"),
    ],
)
async def test_fund_sandbox_validation(
    api: Api, keys: Keys, payload: dict[str, Any], status: int, code: str, param: str
) -> None:
    got, body, _ = await api.post("/me/payout/fund-sandbox", keys.sandbox_sk, json=payload)
    error = assert_error(got, body, status, code)
    assert error["param"] == param
    assert (await balances(api)) == {"USD": {"available": 0, "pending": 0, "reserved": 0}}


async def test_fund_sandbox_lists_payout_currencies_when_refusing(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/me/payout/fund-sandbox", keys.sandbox_sk, json={"currency": "GBP", "amount": 10}
    )
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["currencies"][0] == "USD" and "MXN" in error["details"]["currencies"]


# ---------------------------------------------------------------------------- transfer


async def test_transfer_moves_usd_from_the_payin_balance(api: Api, keys: Keys) -> None:
    available = await settled_payin(api)
    assert available > 40
    status, body, _ = await api.post("/me/payout/transfer", keys.sandbox_sk, json={"amount": 40})
    assert status == 200, body
    assert body["id"].startswith("ptr_") and body["amount"] == 40 and body["currency"] == "USD"
    assert d(body["payinAvailable"]) == available - 40
    assert body["balances"][0] == {"currency": "USD", "available": 40, "pending": 0, "reserved": 0}
    assert (await payin_balance(api))["available"] == available - 40
    # The pay-in side shows the move as a movement of its own.
    _, payin, _ = await api.get("/me/balance", keys.sandbox_sk)
    moved = [m for m in payin["movements"] if m["type"] == "payout_transfer"]
    assert len(moved) == 1 and moved[0]["amount"] == -40 and moved[0]["bucket"] == "available"


async def test_transfer_the_whole_available_balance(api: Api, keys: Keys) -> None:
    available = await settled_payin(api)
    status, body, _ = await api.post(
        "/me/payout/transfer", keys.sandbox_sk, json={"amount": float(available)}
    )
    assert status == 200, body
    assert (await payin_balance(api))["available"] == 0
    assert (await balances(api))["USD"]["available"] == available


async def test_transfer_over_the_payin_balance_is_refused(api: Api, keys: Keys) -> None:
    available = await settled_payin(api)
    ask = available + d("10.25")
    status, body, _ = await api.post(
        "/me/payout/transfer", keys.sandbox_sk, json={"amount": float(ask)}
    )
    error = assert_error(status, body, 422, "balance_insufficient")
    assert d(error["details"]["availableUsd"]) == available
    assert d(error["details"]["shortfallUsd"]) == d("10.25")
    # Nothing moved on either side.
    assert (await payin_balance(api))["available"] == available
    assert (await balances(api))["USD"]["available"] == 0


async def test_transfer_with_nothing_settled_is_refused(api: Api, keys: Keys) -> None:
    tx = await api.pay(amount=100)
    await api.post(
        f"/payments/{tx['transactionId']}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    # Completed but still pending settlement: not transferable yet.
    status, body, _ = await api.post("/me/payout/transfer", keys.sandbox_sk, json={"amount": 1})
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["details"]["availableUsd"] == 0 and error["details"]["shortfallUsd"] == 1


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"amount": 10, "currency": "MXN"}, 400, "invalid_request"),
        ({"amount": 0}, 422, "amount_invalid"),
        ({"amount": 1.234}, 422, "amount_invalid"),
        ({}, 400, "missing_field"),
        ({"amount": 1, "to": "payout"}, 400, "invalid_request"),
    ],
)
async def test_transfer_validation(
    api: Api, keys: Keys, payload: dict[str, Any], status: int, code: str
) -> None:
    got, body, _ = await api.post("/me/payout/transfer", keys.sandbox_sk, json=payload)
    assert_error(got, body, status, code)


async def test_transfer_is_one_atomic_batch(api: Api, keys: Keys) -> None:
    """Both movements land together: a failure while writing the second undoes the first."""
    available = await settled_payin(api)
    app = api.client.server.app
    from simulator.http.keys import PAYOUTS

    service = app[PAYOUTS]
    original = service.ledger.record

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    service.ledger.record = broken  # type: ignore[method-assign]  # a failing write, put back below
    try:
        status, body, _ = await api.post("/me/payout/transfer", keys.sandbox_sk, json={"amount": 5})
    finally:
        service.ledger.record = original  # type: ignore[method-assign]  # the real method back
    assert_error(status, body, 500, "internal_error")
    assert (await payin_balance(api))["available"] == available
    movements = app[CONTEXT].ledger.movements(("mer_mercadoazul", "sandbox"))
    assert not [m for m in movements if m["type"] == "payout_transfer"]


# ---------------------------------------------------------------------------- swap


async def test_swap_quote_uses_the_fixture_rate_and_markup(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/me/payout/swap?from=USD&to=MXN&amount=100", keys.sandbox_sk)
    assert status == 200, body
    # fx.yaml: MXN 17.10 per USD, markup 2 %.
    assert body == {
        "from": "USD",
        "to": "MXN",
        "amount": 100,
        "midRate": 17.1,
        "rate": 16.758,
        "markupPct": 2,
        "converted": 1675.8,
    }
    # Quotes move no money.
    assert (await balances(api))["USD"]["available"] == 0


async def test_swap_back_to_usd_and_across_currencies(api: Api, keys: Keys) -> None:
    _, body, _ = await api.get("/me/payout/swap?from=MXN&to=USD&amount=1000", keys.sandbox_sk)
    expected = (d(1000) / d("17.10") * d("0.98")).quantize(d("0.01"), rounding=ROUND_DOWN)
    assert d(body["converted"]) == expected == d("57.30")
    _, body, _ = await api.get("/me/payout/swap?from=BRL&to=CLP&amount=100", keys.sandbox_sk)
    cross = (d(100) * d(935) / d("5.05") * d("0.98")).quantize(d(1), rounding=ROUND_DOWN)
    assert d(body["converted"]) == cross  # CLP has no decimals, rounded down


async def test_swap_executes_at_the_quote(api: Api, keys: Keys) -> None:
    await fund(api, "USD", 250)
    _, quote, _ = await api.get("/me/payout/swap?from=USD&to=BRL&amount=100.5", keys.sandbox_sk)
    status, body, _ = await api.post(
        "/me/payout/swap", keys.sandbox_sk, json={"from": "USD", "to": "BRL", "amount": 100.5}
    )
    assert status == 200, body
    assert body["id"].startswith("psw_")
    assert {k: body[k] for k in quote} == quote
    now = await balances(api)
    assert now["USD"]["available"] == d("149.5")
    assert now["BRL"]["available"] == d(str(quote["converted"]))


@pytest.mark.parametrize(
    ("query", "status", "code", "param"),
    [
        ("from=USD&to=USD&amount=10", 400, "invalid_request", "to"),
        ("from=USD&to=GBP&amount=10", 400, "invalid_request", "to"),
        ("from=JPY&to=USD&amount=10", 400, "invalid_request", "from"),
        ("from=usd&to=MXN&amount=10", 400, "invalid_request", "from"),
        ("from=USD&to=mxn&amount=10", 400, "invalid_request", "to"),
        ("from=USD&to=MXN&amount=abc", 422, "amount_invalid", "amount"),
        ("from=USD&to=MXN&amount=-1", 422, "amount_invalid", "amount"),
        ("from=USD&to=MXN&amount=0.001", 422, "amount_invalid", "amount"),
        ("from=CLP&to=USD&amount=1", 422, "amount_invalid", "amount"),  # under one cent
        ("to=MXN&amount=10", 400, "missing_field", "from"),
        ("from=USD&amount=10", 400, "missing_field", "to"),
        ("from=USD&to=MXN", 400, "missing_field", "amount"),
    ],
)
async def test_swap_quote_validation(
    api: Api, keys: Keys, query: str, status: int, code: str, param: str
) -> None:
    got, body, _ = await api.get(f"/me/payout/swap?{query}", keys.sandbox_sk)
    error = assert_error(got, body, status, code)
    assert error["param"] == param


async def test_swap_needs_funds_in_the_source_currency(api: Api, keys: Keys) -> None:
    payload = {"from": "USD", "to": "MXN", "amount": 20}
    status, body, _ = await api.post("/me/payout/swap", keys.sandbox_sk, json=payload)
    assert_error(status, body, 422, "currency_not_funded")
    await fund(api, "USD", 15)
    status, body, _ = await api.post("/me/payout/swap", keys.sandbox_sk, json=payload)
    error = assert_error(status, body, 422, "balance_insufficient")
    assert error["details"]["availableUsd"] == 15 and error["details"]["shortfallUsd"] == 5
    assert (await balances(api))["USD"]["available"] == 15
    assert "MXN" not in await balances(api)


async def test_swap_refuses_unknown_fields(api: Api, keys: Keys) -> None:
    status, body, _ = await api.post(
        "/me/payout/swap",
        keys.sandbox_sk,
        json={"from": "USD", "to": "MXN", "amount": 1, "rate": 20},
    )
    assert_error(status, body, 400, "invalid_request")
