"""Every amount the API takes is refused, never rounded, when it is finer than its currency,
zero, negative or not a number (issue 18): found by walking the served document, so a new
endpoint that takes money fails here until it has a case.

The code is `amount_invalid` (400; 422 on the payout endpoints, as the spec's table says),
except on `POST /checkout/sessions`, where the spec makes every body problem its one 400
`invalid_request` and the amount is the `amount` issue of `details.issues` (docs/decisions.md,
"Strict input, provider links and connection limits").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from simulator.openapi.document import document, operations
from tests.api.test_null_fields import CUSTOMER, RFC, SPEI_RECIPIENT, _settled_payment, send
from tests.conftest import KEYS, Api

DOC = document()

# Amounts in a two-decimal currency (USD, MXN): one every case accepts, and the refused ones.
WHOLE = 20
REFUSED = {20.005: "finer than the currency", 0: "zero", -1: "negative", "20": "a string"}

# (method, document path) -> a setup giving (path to call, body builder for an amount), the
# amount in a two-decimal currency, and the code a refused amount answers with.
Body = Callable[[Any], dict[str, Any]]
Setup = Callable[[Api], Awaitable[tuple[str, Body]]]


async def _payment(api: Api) -> tuple[str, Body]:
    return "/payments", lambda amount: {"amount": amount, "paymentMethodId": "1001"}


async def _transaction(api: Api) -> tuple[str, Body]:
    return "/transactions", lambda amount: {"amount": amount, "paymentMethodId": "1001"}


async def _refund(api: Api) -> tuple[str, Body]:
    tx = await _settled_payment(api)  # an MXN method: refunds are in the local currency
    return f"/payments/{tx['transactionId']}/refund", lambda amount: {"amount": amount}


async def _selector_session(api: Api) -> tuple[str, Body]:
    return "/checkout/sessions", lambda amount: {"amount": amount, "customer": dict(CUSTOMER)}


async def _one_shot_session(api: Api) -> tuple[str, Body]:
    return "/checkout/sessions", lambda amount: {
        "amount": amount,
        "paymentMethodId": "1001",
        "customer": {"fullName": "Ana Souza", "email": "ana@example.org", "documentId": RFC},
    }


async def _fund(api: Api) -> tuple[str, Body]:
    return "/me/payout/fund-sandbox", lambda amount: {"currency": "MXN", "amount": amount}


async def _transfer(api: Api) -> tuple[str, Body]:
    await _settled_payment(api)
    return "/me/payout/transfer", lambda amount: {"amount": amount}


async def _swap(api: Api) -> tuple[str, Body]:
    await send(api, "POST", "/me/payout/fund-sandbox", {"currency": "USD", "amount": 1000})
    return "/me/payout/swap", lambda amount: {"from": "USD", "to": "MXN", "amount": amount}


async def _payout(api: Api) -> tuple[str, Body]:
    await send(api, "POST", "/me/payout/fund-sandbox", {"currency": "MXN", "amount": 10_000})
    return "/me/payout/send", lambda amount: {
        "methodId": "po_mx_spei",
        "amount": amount,
        "recipient": dict(SPEI_RECIPIENT),
    }


async def _sim_deposit(api: Api) -> tuple[str, Body]:
    body = {
        "endUserRef": "amounts",
        "name": "Ana López",
        "email": "ana@example.com",
        "phone": "+5215512345678",
        "depositMethodId": "dm_spei_stp",
    }
    status, created, _ = await send(api, "POST", "/me/deposit-accounts", body)
    assert status in (200, 201), created
    clabe = created["account"]["clabe"]
    return "/_sim/deposits", lambda amount: {"clabe": clabe, "amount": amount}


async def _withdrawal(api: Api) -> tuple[str, Body]:
    await _settled_payment(api)
    return "/_sim/withdrawals", lambda amount: {"amount": amount}


PAYIN, PAYOUT, CHECKOUT = (400, "amount_invalid"), (422, "amount_invalid"), (400, "invalid_request")
CASES: dict[tuple[str, str], tuple[tuple[Setup, ...], tuple[int, str]]] = {
    ("POST", "/payments"): ((_payment,), PAYIN),
    ("POST", "/transactions"): ((_transaction,), PAYIN),
    ("POST", "/payments/{id}/refund"): ((_refund,), PAYIN),
    ("POST", "/checkout/sessions"): ((_selector_session, _one_shot_session), CHECKOUT),
    ("POST", "/me/payout/fund-sandbox"): ((_fund,), PAYOUT),
    ("POST", "/me/payout/transfer"): ((_transfer,), PAYOUT),
    ("POST", "/me/payout/swap"): ((_swap,), PAYOUT),
    ("POST", "/me/payout/send"): ((_payout,), PAYOUT),
    ("POST", "/_sim/deposits"): ((_sim_deposit,), PAYIN),
    ("POST", "/_sim/withdrawals"): ((_withdrawal,), PAYIN),
}
# The one amount in a query string: GET /me/payout/swap (a quote), 422 like the other payouts.
QUOTE = "/me/payout/swap?from=USD&to=MXN&amount="


def _has_amount(schema: dict[str, Any]) -> bool:
    """Whether a request schema (its `then`/`else` branches included) has an `amount`."""
    while "$ref" in schema:
        schema = DOC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    branches = [schema, *(schema[key] for key in ("then", "else") if key in schema)]
    return any(
        "amount" in branch.get("properties", {}) or ("$ref" in branch and _has_amount(branch))
        for branch in branches
    )


def test_every_operation_that_takes_an_amount_has_a_case() -> None:
    bodies, queries = set(), set()
    for path, method, operation, _ in operations(DOC):
        request_body = operation.get("requestBody")
        if request_body and _has_amount(request_body["content"]["application/json"]["schema"]):
            bodies.add((method.upper(), path))
        if any(p.get("name") == "amount" for p in operation.get("parameters", [])):
            queries.add((method.upper(), path))
    assert bodies == set(CASES)
    assert queries == {("GET", "/me/payout/swap")}


@pytest.mark.parametrize("operation", list(CASES), ids=" ".join)
async def test_every_amount_is_refused_not_rounded(api: Api, operation: tuple[str, str]) -> None:
    setups, (status, code) = CASES[operation]
    for setup in setups:
        target, body = await setup(api)
        accepted, out, _ = await send(api, "POST", target, body(WHOLE))
        assert accepted < 300, (setup.__name__, out)  # the body is valid with a whole amount
        for amount, why in REFUSED.items():
            got, out, _ = await send(api, "POST", target, body(amount))
            assert got == status, (setup.__name__, why, out)
            error = out["error"]
            assert error["code"] == code, (setup.__name__, why, out)
            if code == "invalid_request":
                assert [issue["path"] for issue in error["details"]["issues"]] == ["amount"]
            else:
                assert error["param"] == "amount", (setup.__name__, why, out)


async def test_a_quoted_amount_is_refused_not_rounded(api: Api) -> None:
    for amount in ("10.005", "0", "-1", "abc", ""):
        status, out, _ = await api.get(QUOTE + amount, KEYS.sandbox_sk)
        assert status == 422 and out["error"]["code"] == "amount_invalid", (amount, out)
        assert out["error"]["param"] == "amount"
    status, out, _ = await api.get(QUOTE + "10.01", KEYS.sandbox_sk)
    assert status == 200, out
