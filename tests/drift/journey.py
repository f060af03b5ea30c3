"""A journey through the API, driven through the recording shim (each request names its step in
`X-Drift-Step`, so the planter knows which answer to change), and the 20 planted differences
of test_planted.py: what each changes, in the upstream's answers and webhooks."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

from tests.drift.conftest import World, call

EVENTS = [
    "payment.completed",
    "payment.captured",
    "payment.failed",
    "chargeback.created",
    "claim.opened",
]
WEBHOOK_COUNT = 7  # what the upstream sends in the journey, before any plant


def run(shim_url: str, world: World) -> None:
    """The journey: tokens, payments (presentment, simulate paid/failed/chargeback), a refund,
    errors, balance, checkout, methods, a webhook subscription."""
    sk, pk = world.key(), world.key(kind="publishable")
    api = f"{shim_url}/api/v1"

    def step(name: str, method: str, path: str, key: str | None, body: Any = None) -> Any:
        return call(f"{api}{path}", method, key, body, **{"X-Drift-Step": name})

    tokens = step("token", "POST", "/auth/token", None, {"apiKey": pk, "secretKey": sk})
    token = tokens["accessToken"]
    step("ping", "GET", "/ping", token)
    step("subscribe", "POST", "/webhooks", sk, {"url": f"{shim_url}/_receiver", "events": EVENTS})
    a = step("create_a", "POST", "/payments", sk, {"amount": 10, "paymentMethodId": "1001"})
    tx_a = a["transactionId"]
    step("get_a", "GET", f"/payments/{tx_a}", sk)
    step("get_a_again", "GET", f"/payments/{tx_a}", sk)
    step("pay_a", "POST", f"/payments/{tx_a}/simulate", sk, {"action": "paid"})
    step("get_a_paid", "GET", f"/payments/{tx_a}", sk)
    step("refund_a", "POST", f"/payments/{tx_a}/refund", token, {"amount": 50})
    b = step(
        "create_b",
        "POST",
        "/payments",
        sk,
        {
            "amount": 100,
            "currency": "BRL",
            "paymentMethodId": "sbx_pix",
            "documentId": "52998224725",
        },
    )
    tx_b = b["transactionId"]
    step("fail_b", "POST", f"/payments/{tx_b}/simulate", sk, {"action": "failed"})
    step("get_b", "GET", f"/payments/{tx_b}", sk)
    step("missing", "GET", "/payments/nope", sk)
    step("zero", "POST", "/payments", sk, {"amount": 0, "paymentMethodId": "1001"})
    step("publishable", "POST", "/payments", pk, {"amount": 5, "paymentMethodId": "1001"})
    step("balance", "GET", "/me/balance", sk)
    step("balance_again", "GET", "/me/balance", sk)
    customer = {"firstName": "Ana", "lastName": "Lima", "email": "a@example.com", "phone": "+5511"}
    step("checkout", "POST", "/checkout/sessions", sk, {"amount": 20, "customer": customer})
    step("methods", "GET", "/payment-methods?country=MX", sk)
    c = step("create_c", "POST", "/payments", sk, {"amount": 15, "paymentMethodId": "1001"})
    tx_c = c["transactionId"]
    step("pay_c", "POST", f"/payments/{tx_c}/simulate", sk, {"action": "paid"})
    step("chargeback_c", "POST", f"/payments/{tx_c}/simulate", sk, {"action": "chargeback"})
    step("list", "GET", "/payments?limit=5", sk)
    step("me", "GET", "/me", sk)


def _set(path: str, value: Any) -> Any:
    def plant(status: int, body: Any) -> tuple[int, Any]:
        changed = copy.deepcopy(body)
        *parents, last = path.split(".")
        node = changed
        for name in parents:
            node = node[name]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value(node[last]) if callable(value) else value
        return status, changed

    return plant


_DELETE = object()


def _status(code: int) -> Any:
    return lambda status, body: (code, body)


def _drop_method(status: int, body: Any) -> tuple[int, Any]:
    changed = copy.deepcopy(body)
    changed["methods"] = changed["methods"][1:]
    changed["count"] -= 1
    return status, changed


def _refund_rule(status: int, body: Any) -> tuple[int, Any]:
    """The upstream refuses a refund above the balance by another rule: 409, its own code."""
    changed = copy.deepcopy(body)
    changed["error"]["code"] = "refund_window_closed"
    return 409, changed


# Step name -> (kind of difference, the plant). Each changes one answer of the journey.
ANSWER_PLANTS: dict[str, tuple[str, Any]] = {
    "zero": ("a renamed error code", _set("error.code", "amount_not_valid")),
    "missing": ("a different status", _status(410)),
    "get_a": ("an extra field", _set("riskScore", 12)),
    "get_a_paid": ("a missing field", _set("settlement", _DELETE)),
    "ping": ("a changed type", _set("ok", "true")),
    "checkout": ("an enum value", _set("status", "open")),
    "create_a": ("a fee off by a cent", _set("fees.total", lambda v: round(v + 0.01, 2))),
    "create_b": ("an FX rate", _set("amountLocal", lambda v: round(v * 1.02, 2))),
    "get_a_again": ("a state reached in a different order", _set("status", "completed")),
    "refund_a": ("a different refund rule", _refund_rule),
    "publishable": ("an error type", _set("error.type", "invalid_request_error")),
    "methods": ("a method missing from a list", _drop_method),
    "balance": ("a balance off", _set("balance.pending", lambda v: round(v + 1, 2))),
    "token": ("a token type", _set("tokenType", "bearer")),
    "subscribe": ("a created status", _status(202)),
    "pay_c": ("events fired", _set("eventsFired", lambda v: v[:1])),
    "me": ("a merchant tier", _set("tier", "premium")),
}


def _earlier(at: str) -> str:
    moment = datetime.fromisoformat(at.replace("Z", "+00:00")) - timedelta(milliseconds=1)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def plant_webhooks(held: list[dict[str, Any]], event: dict[str, Any]) -> list[dict[str, Any]]:
    """A webhook missing (the first payment.captured); two swapped (payment C's
    chargeback.created says it was emitted a millisecond before that payment's
    payment.completed: a state reached in another order); a payload changed (payment.failed
    says `expired`).

    Matched by the payment each event is about, not by arrival: deliveries of different
    payments arrive in any order on a loaded machine, and the swap must land on one object."""
    from payorch_cli.drift.events import object_of

    kind = event.get("type")
    if kind == "payment.captured" and not any(h.get("_dropped") for h in held):
        held.append({"_dropped": True})
        return []
    if kind == "payment.completed":
        of = object_of(event)
        held.append({"_completed_of": of, "createdAt": event["createdAt"]})
        waiting = [h for h in held if h.get("type") == "chargeback.created" and object_of(h) == of]
        for chargeback in waiting:  # it came first: told now, dated before this completion
            held.remove(chargeback)
        return [{**c, "createdAt": _earlier(event["createdAt"])} for c in waiting] + [event]
    if kind == "chargeback.created":
        of = object_of(event)
        completed = next((h for h in held if h.get("_completed_of") == of), None)
        if completed is None:
            held.append(event)  # its payment's completion is still on its way
            return []
        return [{**event, "createdAt": _earlier(completed["createdAt"])}]
    if kind == "payment.failed":
        changed = copy.deepcopy(event)
        changed["data"]["status"] = "expired"
        return [changed]
    return [event]


WEBHOOK_PLANTS = {
    "payment.captured": "a webhook missing",
    "chargeback.created": "two webhooks swapped (a state reached in another order)",
    "payment.failed": "a webhook payload field",
}
