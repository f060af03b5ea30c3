"""A backend with fixed data and a fixed clock, for screenshots that never change.

The shapes are the server's own (copied from real answers of `payorch serve`), the values are
fixed so every run renders the same SVG.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from payorch_cli.client import ApiError
from payorch_cli.tui.backend import Backend, Identity, Page
from payorch_cli.tui.stream import Frame, Opened

NOW = "2026-05-04T12:00:00.000Z"
# A report of `payorch drift --json` (fixed: seven differences of different kinds, both sides to
# fix), for the Drift screen.
DRIFT_REPORT = Path(__file__).with_name("drift-report.json")
BASE_URL = "http://127.0.0.1:8080"


def _tx(
    n: int,
    status: str,
    method: str,
    amount: float,
    local: float,
    currency: str,
    country: str,
    created: str,
    order: str | None,
    **extra: Any,
) -> dict[str, Any]:
    method_ids = {"spei": "1001", "pix": "1010", "oxxo": "1003", "card": "sbx_card", "pse": "1020"}
    timestamps = {"created": created, "updated": created}
    if status != "pending":
        timestamps[status if status != "chargeback" else "completed"] = created
    tx: dict[str, Any] = {
        "id": f"TXN-{n:04d}ABCDEFGH{n:04d}",
        "status": status,
        "amount": amount,
        "currency": "USD",
        "amountLocal": local,
        "currencyLocal": currency,
        "paymentMethodId": method_ids.get(method, "1001"),
        "paymentMethod": method,
        "country": country,
        "fees": {"platform": round(amount * 0.035, 2), "provider": 1.05, "network": 0, "total": 0},
        "settlement": {"type": "delayed", "delay": "T+2", "status": "pending"},
        "paymentFormUrl": None,
        "paymentData": {"method": method},
        "timestamps": timestamps,
        "userEmail": None,
        "refundedAmount": 0,
        "merchantOrderId": order,
        "tag1": None,
        "tag2": None,
        "tag3": None,
        **extra,
    }
    tx["fees"]["total"] = round(tx["fees"]["platform"] + tx["fees"]["provider"], 2)
    return tx


TRANSACTIONS: list[dict[str, Any]] = [
    _tx(
        8,
        "pending",
        "spei",
        50,
        855,
        "MXN",
        "MEX",
        "2026-05-04T11:58:10.000Z",
        "order-1008",
        paymentData={
            "method": "spei",
            "clabe": "646180595996335584",
            "reference": "2682614",
            "bankName": "STP",
            "beneficiaryName": "Payorch Mexico S.A.P.I. de C.V.",
            "dueDate": "2026-05-07T11:58:10.000Z",
            "methodName": "SPEI",
        },
        inputCurrency="MXN",
        inputAmount=872.45,
        userEmail="ana.lopez@example.com",
    ),
    _tx(7, "completed", "pix", 120, 612.5, "BRL", "BRA", "2026-05-04T11:41:02.000Z", "order-1007"),
    _tx(6, "failed", "oxxo", 35.5, 607.05, "MXN", "MEX", "2026-05-04T10:12:44.000Z", "order-1006"),
    _tx(5, "refunded", "card", 89.99, 89.99, "USD", "USA", "2026-05-03T22:30:00.000Z", None),
    _tx(4, "expired", "oxxo", 12, 205.2, "MXN", "MEX", "2026-05-03T18:05:51.000Z", "order-1004"),
    _tx(3, "completed", "spei", 240, 4104, "MXN", "MEX", "2026-05-03T09:00:00.000Z", "order-1003"),
    _tx(
        2, "completed", "card", 15.25, 15.25, "USD", "USA", "2026-05-02T16:47:19.000Z", "order-1002"
    ),
    _tx(1, "pending", "pix", 64, 326.69, "BRL", "BRA", "2026-05-02T08:15:00.000Z", "order-1001"),
]
CHARGEBACK_ID = TRANSACTIONS[5]["id"]

BALANCE: dict[str, Any] = {
    "merchantId": "mer_mercadoazul",
    "currency": "USD",
    "balance": {"available": 1234.56, "pending": 163.42, "frozen": 240.0, "reserve": 18.75},
    "ledgerWarnings": [],
    "tier": "standard",
    "trustScore": 720,
    "rollingReservePct": 5,
    "withdrawalFeeUsd": 10,
    "feeSummary": {
        "grossVolume": 1711.0,
        "platformFees": 59.89,
        "flatFees": 9.45,
        "chargebackFees": 15.0,
        "totalFees": 84.34,
        "netBalance": 1536.67,
    },
    "movements": [
        {
            "id": f"mv_{i:016x}",
            "type": kind,
            "amount": amount,
            "bucket": bucket,
            "transactionId": TRANSACTIONS[1]["id"] if i < 6 else CHARGEBACK_ID,
            "claimId": None,
            "createdAt": "2026-05-04T11:41:05.000Z" if i < 6 else "2026-05-03T09:10:00.000Z",
            "effectiveAt": "2026-05-06T11:41:05.000Z",
        }
        for i, (kind, amount, bucket) in enumerate(
            [
                ("payment", 120.0, "available"),
                ("fee_platform", -4.2, "available"),
                ("fee_processing", -1.05, "available"),
                ("reserve_hold", -6.0, "available"),
                ("reserve_hold", 6.0, "reserve"),
                ("reserve_release", 6.0, "available"),
                ("chargeback_freeze", -240.0, "available"),
                ("chargeback_freeze", 240.0, "frozen"),
            ]
        )
    ],
    "reserveSchedule": [{"amount": 18.75, "releaseAt": "2026-07-03T11:41:05.000Z"}],
}

PAYOUT_BALANCE: dict[str, Any] = {
    "merchantId": "mer_mercadoazul",
    "environment": "sandbox",
    "balances": [
        {"currency": "USD", "available": 500.0, "pending": 0, "reserved": 25.0},
        {"currency": "MXN", "available": 8550.0, "pending": 0, "reserved": 0},
        {"currency": "BRL", "available": 0, "pending": 0, "reserved": 0},
    ],
}

HOOK = {
    "id": "wh_0123456789abcdef",
    "url": "http://127.0.0.1:3000/webhooks",
    "events": ["*"],
    "active": True,
    "managed": False,
}
INBOX = {**HOOK, "id": "wh_fedcba9876543210", "url": None, "managed": True}


def _event(n: int, kind: str, tx: dict[str, Any], at: str) -> dict[str, Any]:
    return {
        "id": f"evt_{n:024x}",
        "type": kind,
        "apiVersion": "2026-05-01",
        "environment": "sandbox",
        "createdAt": at,
        "data": {k: tx[k] for k in ("id", "status", "amount", "currency", "paymentMethod")},
    }


def _attempt(number: int, trigger: str, at: str, status: int | None, ms: float | None, **kw: Any):
    return {
        "number": number,
        "trigger": trigger,
        "at": at,
        "sentAt": at,
        "httpStatus": status,
        "durationMs": ms,
        "error": kw.get("error"),
        "responseBody": kw.get("body"),
        "stored": kw.get("stored", False),
    }


PAID = TRANSACTIONS[1]
DELIVERIES: list[dict[str, Any]] = [
    {
        "id": "dlv_00000000000000000000a003",
        "webhookId": HOOK["id"],
        "eventId": "evt_000000000000000000000003",
        "eventType": "payment.captured",
        "status": "pending",
        "managed": False,
        "attemptCount": 2,
        "attempts": [
            _attempt(1, "initial", "2026-05-04T11:41:05.000Z", 500, 12.4, body="boom"),
            _attempt(2, "retry", "2026-05-04T11:42:05.000Z", None, 10000.0, error="timeout"),
        ],
        "nextAttemptAt": "2026-05-04T11:47:05.000Z",
        "cancelReason": None,
        "createdAt": "2026-05-04T11:41:05.000Z",
        "updatedAt": "2026-05-04T11:42:15.000Z",
        "deliveredAt": None,
        "event": _event(3, "payment.captured", PAID, "2026-05-04T11:41:05.000Z"),
        "webhook": HOOK,
    },
    {
        "id": "dlv_00000000000000000000a002",
        "webhookId": HOOK["id"],
        "eventId": "evt_000000000000000000000002",
        "eventType": "payment.completed",
        "status": "succeeded",
        "managed": False,
        "attemptCount": 1,
        "attempts": [
            _attempt(1, "initial", "2026-05-04T11:41:05.000Z", 200, 3.2, body='{"ok":true}')
        ],
        "nextAttemptAt": None,
        "cancelReason": None,
        "createdAt": "2026-05-04T11:41:05.000Z",
        "updatedAt": "2026-05-04T11:41:05.000Z",
        "deliveredAt": "2026-05-04T11:41:05.000Z",
        "event": _event(2, "payment.completed", PAID, "2026-05-04T11:41:05.000Z"),
        "webhook": HOOK,
    },
    {
        "id": "dlv_00000000000000000000a001",
        "webhookId": INBOX["id"],
        "eventId": "evt_000000000000000000000002",
        "eventType": "payment.completed",
        "status": "stored",
        "managed": True,
        "attemptCount": 0,
        "attempts": [],
        "nextAttemptAt": None,
        "cancelReason": None,
        "createdAt": "2026-05-04T11:41:05.000Z",
        "updatedAt": "2026-05-04T11:41:05.000Z",
        "deliveredAt": None,
        "event": _event(2, "payment.completed", PAID, "2026-05-04T11:41:05.000Z"),
        "webhook": INBOX,
    },
]

# The PIX payment's trace as the server gives it: the cascade (production-like: the first provider
# in outage), the provider's callback, the events and their deliveries.
TRACE: dict[str, Any] = {
    "id": PAID["id"],
    "subject": "payment",
    "environment": "sandbox",
    "truncated": 0,
    "entries": [
        {
            "at": "2026-05-04T11:41:02.000Z",
            "kind": "created",
            "paymentMethodId": "1010",
            "paymentMethod": "pix",
            "amount": "120.00",
            "amountLocal": "612.50",
            "currencyLocal": "BRL",
            "sandboxSimulate": None,
        },
        {
            "at": "2026-05-04T11:41:02.000Z",
            "kind": "routing_attempt",
            "provider": "prv_orbita_pix",
            "outcome": "unavailable",
        },
        {
            "at": "2026-05-04T11:41:02.000Z",
            "kind": "routing_attempt",
            "provider": "prv_pixbank_br",
            "outcome": "accepted",
        },
        {"at": "2026-05-04T11:41:02.000Z", "kind": "provider_chosen", "provider": "prv_pixbank_br"},
        {
            "at": "2026-05-04T11:41:05.000Z",
            "kind": "callback_received",
            "provider": "prv_pixbank_br",
            "outcome": "paid",
            "source": "provider_callback",
        },
        {
            "at": "2026-05-04T11:41:05.000Z",
            "kind": "status_changed",
            "from": "pending",
            "to": "completed",
            "cause": "provider_callback",
        },
        {
            "at": "2026-05-04T11:41:05.000Z",
            "kind": "event_emitted",
            "eventId": "evt_000000000000000000000002",
            "type": "payment.completed",
        },
        {
            "at": "2026-05-04T11:41:05.000Z",
            "kind": "delivery",
            "eventId": "evt_000000000000000000000002",
            "deliveryId": "dlv_00000000000000000000a002",
            "webhookId": HOOK["id"],
            "url": HOOK["url"],
            "result": "succeeded",
            "deliveryStatus": "succeeded",
            "attempt": 1,
            "trigger": "initial",
            "httpStatus": 200,
            "error": None,
            "nextAttemptAt": None,
        },
        {
            "at": "2026-05-04T11:45:00.000Z",
            "kind": "callback_ignored",
            "provider": "prv_pixbank_br",
            "outcome": "paid",
            "reason": "the payment is already completed",
        },
    ],
}


def _provider(
    provider_id: str,
    name: str,
    kind: str,
    rails: list[str],
    behaviour: str = "accept",
    *,
    counts: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0),
    timed_out: int = 0,
    incidents: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    charges, accepted, declined, unavailable, sent, ignored = counts
    provider: dict[str, Any] = {
        "id": provider_id,
        "name": name,
        "kind": kind,
        "rails": rails,
        "behaviour": behaviour,
        "declineReason": None,
        "declineRate": 0,
        "seed": 0,
        "latencySeconds": 0,
        "callback": {"afterSeconds": 30, "outcome": "paid", "mode": "once"},
        "effectiveBehaviour": behaviour,
        "incidents": incidents or [],
        "counts": {
            "charges": charges,
            "accepted": accepted,
            "declined": declined,
            "unavailable": unavailable,
            "timedOut": timed_out,
            "noInstructions": 0,
            "callbacksSent": sent,
            "callbacksIgnored": ignored,
        },
        "appliesTo": "production",
    }
    provider.update(extra)
    return provider


PROVIDERS = [
    _provider(
        "prv_stp_mx",
        "Transferencias Ágiles MX",
        "payin",
        ["spei"],
        effectiveBehaviour="outage",
        counts=(14, 11, 0, 3, 11, 0),
        incidents=[
            {
                "id": "inc_0001",
                "behaviour": "outage",
                "declineReason": None,
                "startsAt": "2026-05-04T11:55:00.000Z",
                "endsAt": "2026-05-04T12:05:00.000Z",
                "active": True,
            }
        ],
    ),
    _provider(
        "prv_cardhub",
        "CardHub Global Acquiring",
        "payin",
        ["card", "debit", "applepay", "googlepay"],
        declineRate=0.3,
        declineReason="insufficient_funds",
        seed=7,
        counts=(10, 7, 3, 0, 7, 0),
        callback={"afterSeconds": 30, "outcome": "paid", "mode": "duplicate"},
        incidents=[
            {
                "id": "inc_0002",
                "behaviour": "decline",
                "declineReason": "expired_card",
                "startsAt": "2026-05-04T18:00:00.000Z",
                "endsAt": "2026-05-04T18:30:00.000Z",
                "active": False,
            }
        ],
    ),
    _provider(
        "prv_orbita_cards",
        "Órbita Card Processing",
        "payin",
        ["card", "debit"],
        "outage",
        declineReason="upstream_timeout",
        counts=(6, 0, 0, 6, 0, 0),
    ),
    _provider(
        "prv_andes_acquiring",
        "Andes Acquiring",
        "payin",
        ["card"],
        "decline",
        declineReason="do_not_honor",
        counts=(2, 0, 2, 0, 0, 0),
    ),
    _provider(
        "prv_boleto_br",
        "Cobrança Fácil",
        "payin",
        ["boleto"],
        callback={"afterSeconds": None, "outcome": "paid", "mode": "once"},
        counts=(1, 1, 0, 0, 0, 0),
    ),
    _provider(
        "prv_lonestar_bank",
        "Lone Star Commerce Bank",
        "payin",
        ["wire"],
        latencySeconds=45,
        timed_out=2,
        callback={"afterSeconds": 600, "outcome": "paid", "mode": "once"},
        counts=(3, 3, 0, 0, 2, 1),
    ),
    _provider(
        "prv_payouts_latam",
        "Dispersiones LATAM",
        "payout",
        ["spei", "pix", "bank", "phone_wallet", "email_wallet"],
        callback={"afterSeconds": 60, "outcome": "rejected", "mode": "once"},
        counts=(2, 2, 0, 0, 2, 0),
    ),
]


def _logged(
    n: int,
    method: str,
    path: str,
    status: int,
    error: str | None = None,
    *,
    replayed: bool = False,
    merchant: str | None = "mer_mercadoazul",
    events: tuple[str, ...] = (),
    query: str | None = None,
) -> dict[str, Any]:
    return {
        "id": f"req_{n:024x}",
        "at": f"2026-05-04T11:5{n}:00.000Z",
        "simulatedAt": f"2026-05-06T11:5{n}:00.000Z",
        "method": method,
        "path": path,
        "query": query,
        "status": status,
        "errorCode": error,
        "merchantId": merchant,
        "environment": "sandbox" if merchant else None,
        "durationMs": 2.5 + n,
        "idempotentReplayed": replayed,
        "eventIds": list(events),
    }


REQUESTS: list[dict[str, Any]] = [
    _logged(6, "POST", "/api/v1/payments", 200, replayed=True),
    _logged(5, "GET", "/api/v1/me", 401, "missing_credentials", merchant=None),
    _logged(4, "POST", "/_sim/clock/advance", 200, events=("evt_settled", "evt_pdf")),
    _logged(3, "GET", "/api/v1/payments/TXN-nope", 404, "transaction_not_found"),
    _logged(2, "POST", "/api/v1/payments", 400, "invalid_request"),
    _logged(1, "POST", "/api/v1/payments", 200),
    # A long path and query: cut in the middle at 80 columns, so the status still shows.
    _logged(
        0,
        "GET",
        "/api/v1/payments",
        200,
        query="status=completed&paymentMethodId=1001&merchantOrderId=order-1003&limit=50",
    ),
]
REQUEST_DETAIL: dict[str, Any] = {
    **REQUESTS[4],
    "request": {
        "headers": {"Idempotency-Key": "order-42"},
        "body": {
            "bytes": 84,
            "truncated": False,
            "body": {"amount": -5, "paymentMethodId": "1001", "documentId": "****4725"},
        },
    },
    "response": {
        "body": {
            "bytes": 190,
            "truncated": False,
            "body": {
                "error": {
                    "code": "invalid_request",
                    "type": "invalid_request_error",
                    "message": "`amount` must be greater than 0.",
                    "param": "amount",
                    "requestId": REQUESTS[4]["id"],
                }
            },
        }
    },
}


class QuietReader:
    """An event stream that opens, then stays silent until closed."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def frames(self) -> Iterator[Frame]:
        yield Opened()
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()


class FakeBackend(Backend):
    def __init__(self, *, environment: str = "sandbox", payouts: bool = True) -> None:
        super().__init__(BASE_URL, "sk_test_19g744zrbw5buqxqpxp5w4gj")
        self.environment = environment
        self.payouts = payouts
        self.calls: list[str] = []
        self.request_queries: list[tuple[str | None, str | None, str | None]] = []
        self.include_tools: list[bool] = []

    def call(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        raise AssertionError(f"the fake makes no HTTP call ({method} {path})")

    def team(self) -> str:
        return ""  # local mode: no owners

    def open_stream(self) -> QuietReader:  # type: ignore[override]  # a reader with the real one's interface, no HTTP
        return QuietReader()

    def ping(self) -> Identity:
        return Identity("mer_mercadoazul", "Mercado Azul S.A. de C.V.", self.environment, "secret")

    def clock(self) -> dict[str, Any]:
        return {"now": NOW, "offsetSeconds": 172800.0}

    def payments(
        self,
        *,
        offset: int = 0,
        limit: int = 50,
        status: str | None = None,
        method: str | None = None,
        merchant_order_id: str | None = None,
    ) -> Page:
        rows = [
            tx
            for tx in TRANSACTIONS
            if (status is None or tx["status"] == status)
            and (method is None or tx["paymentMethod"] == method)
            and (merchant_order_id is None or tx["merchantOrderId"] == merchant_order_id)
        ]
        return Page(copy.deepcopy(rows[offset : offset + limit]), len(rows), offset, limit)

    def payment(self, transaction_id: str) -> dict[str, Any]:
        for tx in TRANSACTIONS:
            if tx["id"] == transaction_id:
                return copy.deepcopy(tx)
        raise ApiError("transaction_not_found", f"No transaction {transaction_id}.", 404)

    def balance(self) -> dict[str, Any]:
        return copy.deepcopy(BALANCE)

    def payout_balance(self) -> dict[str, Any] | None:
        return copy.deepcopy(PAYOUT_BALANCE) if self.payouts else None

    def deliveries(self) -> list[dict[str, Any]]:
        return copy.deepcopy(DELIVERIES)

    def trace(self, transaction_id: str) -> dict[str, Any]:
        self.payment(transaction_id)  # transaction_not_found as the server says it
        if transaction_id == PAID["id"]:
            return copy.deepcopy(TRACE)
        return {**TRACE, "id": transaction_id, "entries": []}

    def simulate(self, transaction_id: str, action: str) -> dict[str, Any]:
        self.calls.append(f"simulate {transaction_id} {action}")
        return {"id": transaction_id, "status": action, "eventsFired": []}

    def replay(self, webhook_id: str, delivery_id: str) -> dict[str, Any]:
        self.calls.append(f"replay {webhook_id} {delivery_id}")
        return next(d for d in DELIVERIES if d["id"] == delivery_id)

    def providers(self) -> list[dict[str, Any]]:
        return copy.deepcopy(PROVIDERS)

    def start_incident(self, provider_id: str, behaviour: str, seconds: float) -> dict[str, Any]:
        self.calls.append(f"incident {provider_id} {behaviour} {seconds:g}")
        return {
            "id": "inc_0003",
            "behaviour": behaviour,
            "declineReason": None,
            "startsAt": NOW,
            "endsAt": "2026-05-04T12:10:00.000Z",
            "active": True,
        }

    def end_incidents(self, provider_id: str) -> list[dict[str, Any]]:
        self.calls.append(f"end incidents {provider_id}")
        provider = next((p for p in PROVIDERS if p["id"] == provider_id), {})
        ended = []
        for incident in provider.get("incidents") or []:
            if incident["active"]:
                ended.append({**incident, "endsAt": NOW, "active": False, "ended": "early"})
            else:
                ended.append({**incident, "ended": "cancelled"})
        return ended

    def reset_providers(self) -> list[dict[str, Any]]:
        self.calls.append("reset providers")
        return copy.deepcopy(PROVIDERS)

    def requests(
        self,
        *,
        limit: int = 50,
        status: str | None = None,
        method: str | None = None,
        path: str | None = None,
        include_tools: bool = False,
    ) -> Page:
        self.request_queries.append((status, method, path))
        self.include_tools.append(include_tools)
        rows = [
            r
            for r in REQUESTS
            if (status is None or str(r["status"])[0] == status[0])
            and (method is None or r["method"] == method)
            and (path is None or r["path"].startswith((path, "/api/v1" + path)))
        ]
        return Page(copy.deepcopy(rows[:limit]), len(rows), 0, limit)

    def request_detail(self, request_id: str) -> dict[str, Any]:
        if request_id == REQUEST_DETAIL["id"]:
            return copy.deepcopy(REQUEST_DETAIL)
        summary = next((r for r in REQUESTS if r["id"] == request_id), None)
        if summary is None:
            raise ApiError("request_not_found", f"No request {request_id}.", 404)
        empty = {"bytes": 0, "truncated": False}
        return {**summary, "request": {"headers": {}, "body": empty}, "response": {"body": empty}}
