"""POST /me/payout/send and the payout lifecycle through the HTTP API: per-rail recipient checks,
limits, funds, the simulated provider's rejection, Idempotency-Key, concurrency, list/get,
simulate (every action of the spec), production, and the payout events."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.http.keys import BUS, PAYOUTS
from tests.api.test_payouts import (
    DAY,
    RECIPIENTS,
    SPEI,
    WALLET,
    balances,
    d,
    fund,
)
from tests.conftest import KEYS, Api, Keys, assert_error

# Enough of each currency for one payout at every real rail's minimum and then some.
FUNDING = {"MXN": 10_000, "BRL": 1_000, "COP": 1_000_000, "CLP": 100_000, "PEN": 1_000}
FUNDING |= {"ARS": 100_000, "USD": 1_000}
AMOUNTS = {"MXN": 500, "BRL": 100, "COP": 100_000, "CLP": 10_000, "PEN": 100}
AMOUNTS |= {"ARS": 10_000, "USD": 50}
CURRENCY = {
    "po_mx_spei": "MXN",
    "po_br_pix": "BRL",
    "po_co_bank": "COP",
    "po_cl_bank": "CLP",
    "po_pe_bank": "PEN",
    "po_ar_bank": "ARS",
    "po_co_nequi": "COP",
    "po_pe_yape": "PEN",
    "po_us_email_wallet": "USD",
}
REAL_METHODS = sorted(CURRENCY)
FAIL_ACTIONS = ["failed", "rejected", "refunded", "returned"]


class Events:
    def __init__(self, client: TestClient) -> None:
        self.seen: list[dict[str, Any]] = []
        client.server.app[BUS].subscribe(self.seen.append)

    def of(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.seen if e["type"] == event_type]


@pytest.fixture
def events(client: TestClient) -> Events:
    return Events(client)


async def send(
    api: Api,
    method_id: str,
    amount: Any,
    recipient: Any = None,
    key: str = KEYS.sandbox_sk,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, Any]:
    body = {"methodId": method_id, "amount": amount}
    body["recipient"] = RECIPIENTS[method_id] if recipient is None else recipient
    return await api.post("/me/payout/send", key, json=body, headers=headers)


async def sent(api: Api, method_id: str = "po_us_email_wallet", amount: Any = 50) -> Any:
    status, body, _ = await send(api, method_id, amount)
    assert status == 200, body
    return body["payout"]


async def simulate(api: Api, payout_id: str, action: Any, key: str = KEYS.sandbox_sk) -> Any:
    return await api.post(f"/me/payout/send/{payout_id}/simulate", key, json={"action": action})


# ---------------------------------------------------------------------------- success


@pytest.mark.parametrize("method_id", REAL_METHODS)
async def test_a_sandbox_payout_is_debited_and_stays_processing(
    api: Api, keys: Keys, method_id: str
) -> None:
    currency = CURRENCY[method_id]
    await fund(api, currency, FUNDING[currency])
    amount = AMOUNTS[currency]
    status, body, _ = await send(api, method_id, amount)
    assert status == 200, body
    assert set(body) == {"payout", "methodName", "logoUrl", "iconUrl"}
    assert body["logoUrl"] == body["iconUrl"] and "/static/icons/" in body["iconUrl"]
    payout = body["payout"]
    assert payout["id"].startswith("po_") and payout["methodId"] == method_id
    assert payout["methodName"] == body["methodName"]
    assert payout["status"] == "processing" and payout["completedAt"] is None
    assert payout["currency"] == currency and payout["amount"] == amount
    assert payout["provider"] == "simulated" and payout["providerRef"].startswith("sim_")
    assert payout["environment"] == "sandbox" and "failureReason" not in payout
    assert payout["recipient"]["name"] == RECIPIENTS[method_id]["name"]
    assert RECIPIENTS[method_id]["account"] not in str(payout)  # masked, never stored whole
    now = (await balances(api))[currency]
    assert now == {"available": FUNDING[currency] - amount, "pending": 0, "reserved": amount}


@pytest.mark.parametrize("method_id", ["sbx_po_mx_spei", "sbx_po_br_pix", "sbx_po_co_bank"])
async def test_a_synthetic_payout_debits_nothing(api: Api, keys: Keys, method_id: str) -> None:
    amount = {"sbx_po_mx_spei": 500, "sbx_po_br_pix": 100, "sbx_po_co_bank": 100_000}[method_id]
    status, body, _ = await send(api, method_id, amount)  # no balance at all
    assert status == 200, body
    payout = body["payout"]
    assert payout["status"] == "processing"
    assert payout["provider"] is None and payout["providerRef"] is None
    assert await balances(api) == {"USD": {"available": 0, "pending": 0, "reserved": 0}}


async def test_a_curp_and_optional_email_are_accepted(api: Api) -> None:
    await fund(api, "MXN", 1000)
    recipient = {
        **SPEI,
        "documentType": "CURP",
        "documentId": "YEUB811009HCHPTK69",
        "email": "ana@example.com",
    }
    status, body, _ = await send(api, "po_mx_spei", 100, recipient)
    assert status == 200, body


@pytest.mark.parametrize(
    ("account_type", "account"),
    [
        ("CNPJ", "11222333000181"),
        ("EMAIL", "joao@example.com.br"),
        ("PHONE", "+5511987654321"),
        ("EVP", "123e4567-e89b-42d3-a456-426614174000"),
    ],
)
async def test_every_pix_key_type(api: Api, account_type: str, account: str) -> None:
    await fund(api, "BRL", 1000)
    recipient = {**RECIPIENTS["po_br_pix"], "accountType": account_type, "account": account}
    status, body, _ = await send(api, "po_br_pix", 10, recipient)
    assert status == 200, body


async def test_a_cnpj_document_is_accepted_on_pix(api: Api) -> None:
    await fund(api, "BRL", 1000)
    recipient = {**RECIPIENTS["po_br_pix"], "documentId": "11222333000181"}
    status, body, _ = await send(api, "po_br_pix", 10, recipient)
    assert status == 200, body


# ---------------------------------------------------------------------------- recipient checks


def _without(recipient: dict[str, str], key: str) -> dict[str, str]:
    return {k: v for k, v in recipient.items() if k != key}


RECIPIENT_CASES = [
    # (id, method, recipient, field named)
    ("clabe-17-digits", "po_mx_spei", {**SPEI, "account": "01218000118359719"}, "account"),
    ("clabe-check-digit", "po_mx_spei", {**SPEI, "account": "012180001183597199"}, "account"),
    ("clabe-letters", "po_mx_spei", {**SPEI, "account": "01218000118359719A"}, "account"),
    ("clabe-missing", "po_mx_spei", _without(SPEI, "account"), "account"),
    ("spei-doc-type", "po_mx_spei", {**SPEI, "documentType": "INE"}, "documentType"),
    ("spei-doc-type-missing", "po_mx_spei", _without(SPEI, "documentType"), "documentType"),
    ("rfc-invalid", "po_mx_spei", {**SPEI, "documentId": "IXLZ9511197B2"}, "documentId"),
    (
        "curp-as-rfc",
        "po_mx_spei",
        {**SPEI, "documentType": "RFC", "documentId": "YEUB811009HCHPTK69"},
        "documentId",
    ),
    (
        "rfc-as-curp",
        "po_mx_spei",
        {**SPEI, "documentType": "CURP", "documentId": "IXLZ9511197B1"},
        "documentId",
    ),
    ("name-missing", "po_mx_spei", _without(SPEI, "name"), "name"),
    ("name-blank", "po_mx_spei", {**SPEI, "name": "   "}, "name"),
    ("name-too-long", "po_mx_spei", {**SPEI, "name": "A" * 201}, "name"),
    ("name-not-string", "po_mx_spei", {**SPEI, "name": 42}, "name"),
    ("email-invalid", "po_mx_spei", {**SPEI, "email": "not-an-email"}, "email"),
    ("bank-code-sent-on-spei", "po_mx_spei", {**SPEI, "bankCode": "012"}, "bankCode"),
    (
        "pix-cpf-key-bad",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "account": "52998224724"},
        "account",
    ),
    (
        "pix-email-key-bad",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "accountType": "EMAIL", "account": "nope"},
        "account",
    ),
    (
        "pix-phone-key-bad",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "accountType": "PHONE", "account": "11987654321"},
        "account",
    ),
    (
        "pix-evp-key-bad",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "accountType": "EVP", "account": "1234"},
        "account",
    ),
    (
        "pix-cnpj-key-bad",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "accountType": "CNPJ", "account": "11222333000182"},
        "account",
    ),
    (
        "pix-key-type-unknown",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "accountType": "IBAN"},
        "accountType",
    ),
    (
        "pix-document-bad-cpf",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "documentId": "12345678900"},
        "documentId",
    ),
    (
        "pix-document-with-dots",
        "po_br_pix",
        {**RECIPIENTS["po_br_pix"], "documentId": "529.982.247-25"},
        "documentId",
    ),
    ("co-bank-code", "po_co_bank", {**RECIPIENTS["po_co_bank"], "bankCode": "999"}, "bankCode"),
    (
        "co-bank-code-label",
        "po_co_bank",
        {**RECIPIENTS["po_co_bank"], "bankCode": "Bancolombia"},
        "bankCode",
    ),
    (
        "co-account-type",
        "po_co_bank",
        {**RECIPIENTS["po_co_bank"], "accountType": "CURRENT"},
        "accountType",
    ),
    (
        "co-account-letters",
        "po_co_bank",
        {**RECIPIENTS["po_co_bank"], "account": "12AB"},
        "account",
    ),
    ("co-document", "po_co_bank", {**RECIPIENTS["po_co_bank"], "documentId": "123"}, "documentId"),
    ("cl-rut", "po_cl_bank", {**RECIPIENTS["po_cl_bank"], "documentId": "123456780"}, "documentId"),
    ("cl-bank-code", "po_cl_bank", {**RECIPIENTS["po_cl_bank"], "bankCode": "007"}, "bankCode"),
    (
        "pe-cci-19",
        "po_pe_bank",
        {**RECIPIENTS["po_pe_bank"], "account": "0021930012345678901"},
        "account",
    ),
    (
        "pe-cci-21",
        "po_pe_bank",
        {**RECIPIENTS["po_pe_bank"], "account": "002193001234567890123"},
        "account",
    ),
    ("pe-bank-code", "po_pe_bank", {**RECIPIENTS["po_pe_bank"], "bankCode": "001"}, "bankCode"),
    ("pe-dni", "po_pe_bank", {**RECIPIENTS["po_pe_bank"], "documentId": "1234567"}, "documentId"),
    (
        "ar-cbu-21",
        "po_ar_bank",
        {**RECIPIENTS["po_ar_bank"], "account": "285059094009041813520"},
        "account",
    ),
    (
        "ar-cbu-check",
        "po_ar_bank",
        {**RECIPIENTS["po_ar_bank"], "account": "2850590940090418135202"},
        "account",
    ),
    (
        "ar-cbu-first-block",
        "po_ar_bank",
        {**RECIPIENTS["po_ar_bank"], "account": "2850591940090418135201"},
        "account",
    ),
    (
        "nequi-9-digits",
        "po_co_nequi",
        {**RECIPIENTS["po_co_nequi"], "account": "300123456"},
        "account",
    ),
    (
        "nequi-with-prefix",
        "po_co_nequi",
        {**RECIPIENTS["po_co_nequi"], "account": "+573001234567"},
        "account",
    ),
    (
        "yape-10-digits",
        "po_pe_yape",
        {**RECIPIENTS["po_pe_yape"], "account": "9876543210"},
        "account",
    ),
    ("wallet-email", "po_us_email_wallet", {**WALLET, "account": "jane.example.com"}, "account"),
    ("wallet-document", "po_us_email_wallet", {**WALLET, "documentId": "P-1"}, "documentId"),
]


@pytest.mark.parametrize(
    ("method_id", "recipient", "field"),
    [pytest.param(m, r, f, id=i) for i, m, r, f in RECIPIENT_CASES],
)
async def test_a_bad_recipient_field_is_named_before_any_debit(
    api: Api, events: Events, method_id: str, recipient: dict[str, Any], field: str
) -> None:
    currency = CURRENCY[method_id]
    await fund(api, currency, FUNDING[currency])
    before = await balances(api)
    status, body, _ = await send(api, method_id, AMOUNTS[currency], recipient)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == f"recipient.{field}"
    assert f"recipient.{field}" in error["message"]
    assert [i["path"] for i in error["details"]["issues"]] == [f"recipient.{field}"]
    assert await balances(api) == before
    _, page, _ = await api.get("/me/payout/send", KEYS.sandbox_sk)
    assert page["data"] == [] and not events.seen


async def test_every_bad_field_is_listed_at_once(api: Api) -> None:
    await fund(api, "MXN", 1000)
    status, body, _ = await send(
        api, "po_mx_spei", 100, {"account": "123", "documentType": "RFC", "documentId": "X"}
    )
    error = assert_error(status, body, 400, "invalid_request")
    paths = [i["path"] for i in error["details"]["issues"]]
    assert paths == ["recipient.name", "recipient.account", "recipient.documentId"]


@pytest.mark.parametrize("recipient", [None, "Ana", ["Ana"]])
async def test_the_recipient_must_be_an_object(api: Api, recipient: Any) -> None:
    body: dict[str, Any] = {"methodId": "po_mx_spei", "amount": 100}
    if recipient is not None:
        body["recipient"] = recipient
    status, out, _ = await api.post("/me/payout/send", KEYS.sandbox_sk, json=body)
    error = assert_error(status, out, 400, "invalid_request")
    assert error["param"] == "recipient"


@pytest.mark.parametrize(("document", "ok"), [("20123456786", True), ("20123456785", False)])
async def test_an_argentine_recipient_may_be_named_by_cuit_or_cuil(
    api: Api, document: str, ok: bool
) -> None:
    await fund(api, "ARS", FUNDING["ARS"])
    recipient = {**RECIPIENTS["po_ar_bank"], "documentId": document}
    status, body, _ = await send(api, "po_ar_bank", AMOUNTS["ARS"], recipient)
    if ok:
        assert status == 200, body
    else:
        error = assert_error(status, body, 400, "invalid_request")
        assert error["param"] == "recipient.documentId"


async def test_a_wrong_clabe_check_digit_names_the_right_one(api: Api) -> None:
    status, body, _ = await send(
        api, "sbx_po_mx_spei", 500, {**SPEI, "account": "012180001183597199"}
    )
    issues = assert_error(status, body, 400, "invalid_request")["details"]["issues"]
    message = "the check digit (the 18th) is 9; for these 17 digits it is 8"
    assert issues == [{"path": "recipient.account", "message": message}]


async def test_synthetic_methods_check_the_recipient_too(api: Api) -> None:
    status, body, _ = await send(api, "sbx_po_mx_spei", 500, {**SPEI, "account": "123"})
    error = assert_error(status, body, 400, "invalid_request")
    assert error["param"] == "recipient.account"


# ------------------------------------------------------------------------ amount, method, limits


@pytest.mark.parametrize("amount", [0, -10, "100", True, None, 10.001, [], {}, 1e30])
async def test_amount_invalid_is_422_on_payouts(api: Api, amount: Any) -> None:
    await fund(api, "MXN", 1000)
    status, body, _ = await send(api, "po_mx_spei", amount)
    if amount is None:
        error = assert_error(status, body, 400, "missing_field")
    else:
        error = assert_error(status, body, 422, "amount_invalid")
    assert error["param"] == "amount"
    assert (await balances(api))["MXN"]["available"] == 1000


async def test_clp_payouts_take_whole_pesos(api: Api) -> None:
    await fund(api, "CLP", 100_000)
    status, body, _ = await send(api, "po_cl_bank", 10_000.5)
    assert_error(status, body, 422, "amount_invalid")


@pytest.mark.parametrize("method_id", ["po_nowhere", "1001", "", 42])
async def test_unknown_method_is_unavailable(api: Api, method_id: Any) -> None:
    status, body, _ = await api.post(
        "/me/payout/send",
        KEYS.sandbox_sk,
        json={"methodId": method_id, "amount": 10, "recipient": SPEI},
    )
    error = assert_error(status, body, 422, "payout_method_unavailable")
    assert error["param"] == "methodId"
    assert "po_mx_spei" in error["details"]["methodIds"]


async def test_synthetic_methods_are_unavailable_in_production(api: Api, keys: Keys) -> None:
    status, body, _ = await send(api, "sbx_po_mx_spei", 500, key=keys.live_sk)
    error = assert_error(status, body, 422, "payout_method_unavailable")
    assert not any(i.startswith("sbx_") for i in error["details"]["methodIds"])


async def test_missing_method_and_unknown_fields(api: Api) -> None:
    status, body, _ = await api.post(
        "/me/payout/send", KEYS.sandbox_sk, json={"amount": 10, "recipient": SPEI}
    )
    assert assert_error(status, body, 400, "missing_field")["param"] == "methodId"
    status, body, _ = await api.post(
        "/me/payout/send",
        KEYS.sandbox_sk,
        json={"methodId": "po_mx_spei", "amount": 10, "recipient": SPEI, "note": "x"},
    )
    assert assert_error(status, body, 400, "invalid_request")["param"] == "note"


@pytest.mark.parametrize(
    ("method_id", "amount", "bound"),
    [
        ("po_mx_spei", 17, "min"),  # 0.99 USD < 1
        ("po_us_email_wallet", "5000.01", "max"),
        ("po_pe_yape", 1861, "max"),  # 500.27 USD > 500
        ("sbx_po_co_bank", 19_000, "min"),  # 4.81 USD < 5, synthetic rails too
    ],
)
async def test_amount_out_of_limits(api: Api, method_id: str, amount: Any, bound: str) -> None:
    currency = "USD" if method_id.endswith("wallet") else CURRENCY.get(method_id, "COP")
    await fund(api, currency, 10_000)
    status, body, _ = await send(api, method_id, float(amount))
    error = assert_error(status, body, 422, "amount_out_of_limits")
    details = error["details"]
    assert details["boundViolated"] == bound
    assert details["limit"]["currency"] == "USD"
    assert {"min", "max"} <= set(details["limit"]) and "amountUsd" in details


async def test_the_limits_are_inclusive(api: Api) -> None:
    await fund(api, "USD", 10_000)
    for amount in (1, 5000):
        status, body, _ = await send(api, "po_us_email_wallet", amount)
        assert status == 200, body


# ---------------------------------------------------------------------------- funds


async def test_an_unfunded_currency_is_refused(api: Api) -> None:
    await fund(api, "USD", 1000)
    status, body, _ = await send(api, "po_mx_spei", 100)
    error = assert_error(status, body, 422, "currency_not_funded")
    assert error["details"]["currency"] == "MXN"


async def test_a_payout_over_the_balance_is_refused(api: Api) -> None:
    await fund(api, "MXN", 171)  # 10 USD at the mid rate
    status, body, _ = await send(api, "po_mx_spei", 342)
    error = assert_error(status, body, 422, "balance_insufficient")
    details = error["details"]
    assert details["currency"] == "MXN" and details["available"] == 171
    assert details["shortfall"] == 171
    assert details["availableUsd"] == 10 and details["shortfallUsd"] == 10
    assert (await balances(api))["MXN"] == {"available": 171, "pending": 0, "reserved": 0}


async def test_the_whole_balance_can_be_sent(api: Api) -> None:
    await fund(api, "USD", 75.25)
    await sent(api, amount=75.25)
    assert (await balances(api))["USD"] == {"available": 0, "pending": 0, "reserved": d("75.25")}
    status, body, _ = await send(api, "po_us_email_wallet", 1)
    assert_error(status, body, 422, "currency_not_funded")


async def test_concurrent_sends_never_overspend(api: Api) -> None:
    """32 concurrent sends of 10 on a balance of 100: exactly 10 succeed."""
    await fund(api, "USD", 100)
    results = await asyncio.gather(*(send(api, "po_us_email_wallet", 10) for _ in range(32)))
    ok = [body for status, body, _ in results if status == 200]
    refused = [body for status, body, _ in results if status != 200]
    assert len(ok) == 10
    assert len({body["payout"]["id"] for body in ok}) == 10
    for body in refused:
        assert body["error"]["code"] in ("currency_not_funded", "balance_insufficient"), body
    assert (await balances(api))["USD"] == {"available": 0, "pending": 0, "reserved": 100}
    _, page, _ = await api.get("/me/payout/send?limit=100", KEYS.sandbox_sk)
    assert page["pagination"]["total"] == 10


async def test_concurrent_sends_of_uneven_sizes(api: Api) -> None:
    await fund(api, "USD", 100)
    amounts = [7, 13, 25, 40, 3, 50, 11, 9] * 3
    results = await asyncio.gather(*(send(api, "po_us_email_wallet", a) for a in amounts))
    spent = sum(
        (d(body["payout"]["amount"]) for status, body, _ in results if status == 200), Decimal(0)
    )
    now = (await balances(api))["USD"]
    assert spent <= 100
    assert now["available"] == 100 - spent and now["reserved"] == spent
    assert now["available"] >= 0


# ---------------------------------------------------------------------------- the provider


async def test_a_provider_rejection_reverses_the_debit(api: Api, events: Events) -> None:
    await fund(api, "MXN", 1000)
    rejected = {**SPEI, "account": "646180000000000009"}
    status, body, _ = await send(api, "po_mx_spei", 400, rejected)
    error = assert_error(status, body, 422, "payout_dispatch_failed")
    assert error["details"]["failureReason"] == "beneficiary_account_closed"
    assert (await balances(api))["MXN"] == {"available": 1000, "pending": 0, "reserved": 0}
    # Kept as failed (its debit and reversal stay in the ledger), never as a success.
    status, got, _ = await api.get(
        f"/me/payout/send/{error['details']['payoutId']}", KEYS.sandbox_sk
    )
    assert status == 200, got
    payout = got["payout"]
    assert payout["status"] == "failed"
    assert payout["failureReason"] == "beneficiary_account_closed"
    assert payout["provider"] == "simulated"
    service = api.client.server.app[PAYOUTS]
    kinds = [m["type"] for m in service.ledger.movements(("mer_mercadoazul", "sandbox"))]
    assert kinds.count("payout_debit") == 2 and kinds.count("payout_reversal") == 2
    assert not events.of("payout.failed")  # the caller has the answer already


@pytest.mark.parametrize(
    ("method_id", "field", "value", "reason"),
    [
        ("po_br_pix", "account", "rejected@pix.example", "pix_key_not_found"),
        ("po_co_bank", "account", "0000000000", "beneficiary_account_invalid"),
        ("po_ar_bank", "account", "0000000000000000000000", "cbu_not_found"),
        ("po_pe_yape", "account", "900000000", "wallet_not_found"),
        ("po_us_email_wallet", "account", "rejected@wallet.example", "wallet_account_suspended"),
    ],
)
async def test_each_rails_simulated_rejection(
    api: Api, method_id: str, field: str, value: str, reason: str
) -> None:
    currency = CURRENCY[method_id]
    await fund(api, currency, FUNDING[currency])
    recipient = {**RECIPIENTS[method_id], field: value}
    if method_id == "po_br_pix":
        recipient["accountType"] = "EMAIL"
    status, body, _ = await send(api, method_id, AMOUNTS[currency], recipient)
    error = assert_error(status, body, 422, "payout_dispatch_failed")
    assert error["details"]["failureReason"] == reason
    assert (await balances(api))[currency]["available"] == FUNDING[currency]


async def test_a_rejection_is_not_kept_by_idempotency(api: Api) -> None:
    await fund(api, "MXN", 1000)
    headers = {"Idempotency-Key": "po-retry-1"}
    rejected = {**SPEI, "account": "646180000000000009"}
    status, body, _ = await send(api, "po_mx_spei", 400, rejected, headers=headers)
    assert_error(status, body, 422, "payout_dispatch_failed")
    # The same request again executes again (and is rejected again) ...
    status, body, response = await send(api, "po_mx_spei", 400, rejected, headers=headers)
    assert_error(status, body, 422, "payout_dispatch_failed")
    assert "Idempotent-Replayed" not in response.headers
    # ... and the corrected retry under the same key goes through.
    status, body, response = await send(api, "po_mx_spei", 400, headers=headers)
    assert status == 200, body
    assert "Idempotent-Replayed" not in response.headers
    assert (await balances(api))["MXN"] == {"available": 600, "pending": 0, "reserved": 400}


# ---------------------------------------------------------------------------- Idempotency-Key


async def test_a_retried_send_never_executes_twice(api: Api) -> None:
    await fund(api, "USD", 100)
    headers = {"Idempotency-Key": "payout-7"}
    status, first, _ = await send(api, "po_us_email_wallet", 30, headers=headers)
    assert status == 200, first
    status, again, response = await send(api, "po_us_email_wallet", 30, headers=headers)
    assert status == 200 and again == first
    assert response.headers["Idempotent-Replayed"] == "true"
    assert (await balances(api))["USD"]["available"] == 70
    status, body, _ = await send(api, "po_us_email_wallet", 31, headers=headers)
    assert_error(status, body, 409, "idempotency_conflict")
    assert (await balances(api))["USD"]["available"] == 70


async def test_concurrent_retries_under_one_key_execute_once(api: Api) -> None:
    await fund(api, "USD", 100)
    headers = {"Idempotency-Key": "payout-race"}
    results = await asyncio.gather(
        *(send(api, "po_us_email_wallet", 10, headers=headers) for _ in range(8))
    )
    assert all(status == 200 for status, _, _ in results)
    assert len({body["payout"]["id"] for _, body, _ in results}) == 1
    assert (await balances(api))["USD"]["available"] == 90


async def test_an_error_is_not_kept_by_idempotency(api: Api) -> None:
    headers = {"Idempotency-Key": "payout-unfunded"}
    status, body, _ = await send(api, "po_us_email_wallet", 10, headers=headers)
    assert_error(status, body, 422, "currency_not_funded")
    await fund(api, "USD", 20)
    status, body, _ = await send(api, "po_us_email_wallet", 10, headers=headers)
    assert status == 200, body


async def test_a_malformed_idempotency_key_is_refused(api: Api) -> None:
    await fund(api, "USD", 20)
    status, body, _ = await send(
        api, "po_us_email_wallet", 10, headers={"Idempotency-Key": "x" * 256}
    )
    assert_error(status, body, 400, "invalid_request")
    assert (await balances(api))["USD"]["available"] == 20


# ---------------------------------------------------------------------------- list and get


async def test_list_is_newest_first_with_the_offset_envelope(api: Api, keys: Keys) -> None:
    await fund(api, "USD", 1000)
    ids = [(await sent(api, amount=10 + i))["id"] for i in range(5)]
    status, page, _ = await api.get("/me/payout/send?limit=2&offset=1", keys.sandbox_sk)
    assert status == 200, page
    assert [p["id"] for p in page["data"]] == [ids[3], ids[2]]
    assert page["pagination"] == {"total": 5, "limit": 2, "offset": 1, "pages": 3}
    _, page, _ = await api.get("/me/payout/send?limit=500", keys.sandbox_sk)
    assert page["pagination"]["limit"] == 100  # clamped, like GET /payments


async def test_list_filters_by_status_and_method(api: Api, keys: Keys) -> None:
    await fund(api, "USD", 1000)
    a = await sent(api)
    b = await sent(api)
    c = await sent(api, "sbx_po_mx_spei", 500)
    await simulate(api, a["id"], "paid")
    await simulate(api, b["id"], "failed")
    for status_filter, expected in (
        ("completed", [a["id"]]),
        ("failed", [b["id"]]),
        ("processing", [c["id"]]),
    ):
        _, page, _ = await api.get(f"/me/payout/send?status={status_filter}", keys.sandbox_sk)
        assert [p["id"] for p in page["data"]] == expected
        assert page["pagination"]["total"] == len(expected)
    _, page, _ = await api.get("/me/payout/send?methodId=sbx_po_mx_spei", keys.sandbox_sk)
    assert [p["id"] for p in page["data"]] == [c["id"]]
    status, body, _ = await api.get("/me/payout/send?status=paid", keys.sandbox_sk)
    assert_error(status, body, 400, "invalid_request")


async def test_get_one_payout(api: Api, keys: Keys) -> None:
    await fund(api, "USD", 100)
    payout = await sent(api)
    status, body, _ = await api.get(f"/me/payout/send/{payout['id']}", keys.sandbox_sk)
    assert status == 200 and body == {"payout": payout}
    # Merchant-wide: another shop's key of the same merchant and the legacy key see it too.
    status, body, _ = await api.get(f"/me/payout/send/{payout['id']}", keys.legacy_sk)
    assert status == 200, body


@pytest.mark.parametrize("who", ["unknown", "other_merchant", "production"])
async def test_payout_not_found(api: Api, keys: Keys, who: str) -> None:
    await fund(api, "USD", 100)
    payout_id = "po_nope" if who == "unknown" else (await sent(api))["id"]
    key = {"unknown": keys.sandbox_sk, "other_merchant": keys.other_sk}.get(who, keys.live_sk)
    status, body, _ = await api.get(f"/me/payout/send/{payout_id}", key)
    assert_error(status, body, 404, "payout_not_found")
    status, body, _ = await simulate(
        api, payout_id, "paid", key if who != "production" else keys.other_sk
    )
    assert_error(status, body, 404, "payout_not_found")


# ---------------------------------------------------------------------------- simulate


@pytest.mark.parametrize("action", ["completed", "paid"])
async def test_simulate_completion(api: Api, events: Events, action: str) -> None:
    await fund(api, "USD", 100)
    payout = await sent(api, amount=40)
    status, body, _ = await simulate(api, payout["id"], action)
    assert status == 200, body
    done = body["payout"]
    assert done["status"] == "completed" and done["completedAt"] is not None
    assert done["timestamps"]["completed"] == done["completedAt"]
    assert (await balances(api))["USD"] == {"available": 60, "pending": 0, "reserved": 0}
    (event,) = events.of("payout.completed")
    data = event["data"]
    assert {"id", "status", "amount", "currency", "method", "timestamps"} <= set(data)
    assert data["id"] == payout["id"] and data["status"] == "completed"
    assert data["amount"] == 40 and data["currency"] == "USD" and data["method"] == "email_wallet"
    assert "failureReason" not in data


@pytest.mark.parametrize("action", FAIL_ACTIONS)
async def test_simulate_failure_reverses_the_debit(api: Api, events: Events, action: str) -> None:
    await fund(api, "USD", 100)
    payout = await sent(api, amount=40)
    status, body, _ = await simulate(api, payout["id"], action)
    assert status == 200, body
    failed = body["payout"]
    assert failed["status"] == "failed" and failed["failureReason"]
    assert failed["completedAt"] is None and "failed" in failed["timestamps"]
    assert (await balances(api))["USD"] == {"available": 100, "pending": 0, "reserved": 0}
    (event,) = events.of("payout.failed")
    assert event["data"]["failureReason"] == failed["failureReason"]
    assert event["data"]["status"] == "failed"


async def test_simulate_processing_is_a_no_op(api: Api, events: Events) -> None:
    await fund(api, "USD", 100)
    payout = await sent(api)
    status, body, _ = await simulate(api, payout["id"], "processing")
    assert status == 200 and body == {"payout": payout}
    assert not events.seen


@pytest.mark.parametrize("first", ["paid", "failed"])
@pytest.mark.parametrize("then", ["paid", "failed", "processing", "returned"])
async def test_only_a_processing_payout_moves(api: Api, first: str, then: str) -> None:
    await fund(api, "USD", 100)
    payout = await sent(api)
    await simulate(api, payout["id"], first)
    before = await balances(api)
    status, body, _ = await simulate(api, payout["id"], then)
    error = assert_error(status, body, 400, "invalid_request")
    assert error["details"]["requiredStatus"] == "processing"
    assert await balances(api) == before


@pytest.mark.parametrize("action", ["settled", None, 3, ""])
async def test_unknown_simulate_action(api: Api, action: Any) -> None:
    await fund(api, "USD", 100)
    payout = await sent(api)
    status, body, _ = await simulate(api, payout["id"], action)
    error = assert_error(status, body, 400, "invalid_request")
    assert "returned" in error["details"]["allowed"]


async def test_a_synthetic_failure_reverses_nothing(api: Api, events: Events) -> None:
    await fund(api, "MXN", 1000)
    payout = await sent(api, "sbx_po_mx_spei", 500)
    status, body, _ = await simulate(api, payout["id"], "returned")
    assert status == 200 and body["payout"]["status"] == "failed"
    assert (await balances(api))["MXN"] == {"available": 1000, "pending": 0, "reserved": 0}
    assert len(events.of("payout.failed")) == 1
    other = await sent(api, "sbx_po_mx_spei", 500)
    await simulate(api, other["id"], "completed")
    assert (await balances(api))["MXN"] == {"available": 1000, "pending": 0, "reserved": 0}


async def test_simulate_is_sandbox_only(api: Api, keys: Keys) -> None:
    status, body, _ = await simulate(api, "po_any", "paid", keys.live_sk)
    assert_error(status, body, 400, "simulate_sandbox_only")
    status, body, _ = await simulate(api, "po_any", "paid", keys.sandbox_pk)
    assert_error(status, body, 403, "key_kind_not_allowed")


# ---------------------------------------------------------------------------- production


async def production_usd(api: Api, keys: Keys, amount: float) -> None:
    """Production pay-in, confirmed by its provider, settled, then moved to the payout balance."""
    tx = await api.pay(key=keys.live_sk, amount=200)
    await api.advance(31)  # prv_stp_mx calls back after 30 s
    status, body, _ = await api.get(f"/payments/{tx['transactionId']}", keys.live_sk)
    assert body["status"] == "completed", body
    await api.advance(3 * DAY)
    status, body, _ = await api.post("/me/payout/transfer", keys.live_sk, json={"amount": amount})
    assert status == 200, body


async def test_production_payouts_complete_at_once(api: Api, keys: Keys, events: Events) -> None:
    await production_usd(api, keys, 100)
    status, body, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    assert status == 200, body
    payout = body["payout"]
    assert payout["status"] == "completed" and payout["completedAt"] is not None
    assert payout["provider"] == "simulated" and payout["environment"] == "production"
    assert (await balances(api, keys.live_sk))["USD"] == {
        "available": 40,
        "pending": 0,
        "reserved": 0,
    }
    (event,) = events.of("payout.completed")
    assert event["environment"] == "production" and event["data"]["id"] == payout["id"]
    assert await balances(api) == {"USD": {"available": 0, "pending": 0, "reserved": 0}}


async def test_production_rejections_reverse_too(api: Api, keys: Keys) -> None:
    await production_usd(api, keys, 100)
    status, body, _ = await send(
        api,
        "po_us_email_wallet",
        60,
        {**WALLET, "account": "rejected@wallet.example"},
        key=keys.live_sk,
    )
    assert_error(status, body, 422, "payout_dispatch_failed")
    assert (await balances(api, keys.live_sk))["USD"]["available"] == 100


async def test_sandbox_simulate_header_has_no_effect_on_payouts(api: Api) -> None:
    await fund(api, "USD", 100)
    status, body, _ = await send(
        api, "po_us_email_wallet", 10, headers={"Sandbox-Simulate": "paid"}
    )
    assert status == 200 and body["payout"]["status"] == "processing", body
    await api.advance(3600)
    _, got, _ = await api.get(f"/me/payout/send/{body['payout']['id']}", KEYS.sandbox_sk)
    assert got["payout"]["status"] == "processing"


async def test_send_needs_a_json_body(api: Api) -> None:
    status, body, _ = await api.post(
        "/me/payout/send",
        KEYS.sandbox_sk,
        data="methodId=po_mx_spei",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert_error(status, body, 415, "content_type_required")
    status, body, _ = await api.post(
        "/me/payout/send",
        KEYS.sandbox_sk,
        data="{not json",
        headers={"Content-Type": "application/json"},
    )
    assert_error(status, body, 400, "invalid_json")


async def test_a_restarted_seeded_server_never_reuses_ids(
    aiohttp_client: Any, settings: Any
) -> None:
    """A seeded server restarted on its data dir draws the same ids again: none may be reused."""
    ids: list[str] = []
    for _ in range(2):
        client = await aiohttp_client(create_app(settings))
        api = Api(client)
        await fund(api, "USD", 100)
        ids.append((await sent(api, amount=10))["id"])
        ids.append((await sent(api, "sbx_po_mx_spei", 500))["id"])
        status, body, _ = await api.post(
            "/me/deposit-accounts",
            KEYS.other_sk,
            json={"endUserRef": f"user-{len(ids)}", "name": "Ana", "email": "ana@example.com"},
        )
        assert status == 201, body
        ids.append(body["account"]["id"])
        await client.close()
    assert len(set(ids)) == len(ids)
    client = await aiohttp_client(create_app(settings))
    api = Api(client)
    _, page, _ = await api.get("/me/payout/send", KEYS.sandbox_sk)
    assert page["pagination"]["total"] == 4
    _, accounts, _ = await api.get("/me/deposit-accounts", KEYS.other_sk)
    assert accounts["pagination"]["total"] == 2
