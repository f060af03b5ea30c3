"""Every operation a user's suite sends, with the data each needs: the table the benchmarks share.

Imported by `ops_load.py` (throughput against Prism and a bare aiohttp app), `ab_instructions.py`
(instructions per request, `--operations`) and `seeded_answers.py` (the answers of a seeded run,
before and after). An operation is one request, repeatable: a path with `{payment}` gets a
payment made in `prepare`, one with `{pending}` a fresh pending payment per request (a payment is
marked paid once), `{paid}` a fresh paid, settled payment per request (a refund of 1 unit each:
refunding one payment over and over measures a payment with thousands of refunds, and the
`pending` / `paid` pools are sized by the caller), `{clabe}` a deposit account's CLABE.

`POST /payments` runs on every rail of the catalogue that takes a payment: the sandbox's
built-ins (sandbox key) and every enabled, routable production method (production key), with the
buyer data its `requiredFields` ask for and an amount within its limits. The production methods
left out answer an error by design (fixtures/payment_methods.yaml: 1014 declined, 1021 no
instructions, 1013/1017/1018 unroutable, 1030 disabled). The simulator has no 3-D Secure step:
a card's hosted page is its only extra step (`card hosted checkout`), and 1004 is the card whose
first provider is in outage (the cascade's fall-through).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from _common import LIVE_SK, SK

PK = "pk_test_5kans5915l03i9bsat8xqpwh"  # sandbox publishable key of shp_mazul_tienda
Call = Callable[[str, str, Any, str], tuple[int, bytes]]  # (method, path, body, key)

CPF = "52998224725"
DOCUMENTS = {"MX": "XAXX010101000", "BR": CPF, "CO": "1020304050", "AR": "12345678"}
DOCUMENTS |= {"PE": "45678912", "CL": "12345678-5", "US": "123456789"}
PHONES = {"CO": "+573001234567", "PE": "+51987654321", "MX": "+5215512345678"}
AMOUNTS = {"MXN": 500, "BRL": 100, "COP": 50_000, "ARS": 5_000, "CLP": 5_000, "PEN": 50}
AMOUNTS |= {"USD": 150}

# (paymentMethodId, rail, country, currency, required fields), from fixtures/payment_methods.yaml.
SANDBOX_RAILS = [
    ("sbx_spei", "SPEI", "MX", "MXN", ()),
    ("sbx_pix", "PIX", "BR", "BRL", ("documentId",)),
    ("sbx_cash", "OXXO", "MX", "MXN", ("userEmail",)),
    ("sbx_pse", "PSE", "CO", "COP", ("documentId", "userPhone")),
    ("sbx_card", "card", "US", "USD", ()),
]
PRODUCTION_RAILS = [
    ("1001", "SPEI", "MX", "MXN", ()),
    ("1002", "OXXO", "MX", "MXN", ("userEmail",)),
    ("1003", "voucher", "MX", "MXN", ("userEmail",)),
    ("1004", "card, failover", "MX", "MXN", ()),
    ("1005", "debit", "MX", "MXN", ()),
    ("1006", "PIX", "BR", "BRL", ("documentId",)),
    ("1007", "boleto", "BR", "BRL", ("userName", "documentId")),
    ("1008", "card", "BR", "BRL", ("documentId",)),
    ("1009", "Google Pay", "BR", "BRL", ()),
    ("1010", "PSE", "CO", "COP", ("documentId", "userPhone")),
    ("1011", "Efecty voucher", "CO", "COP", ("documentId",)),
    ("1012", "card", "CO", "COP", ()),
    ("1015", "Rapipago voucher", "AR", "ARS", ("documentId",)),
    ("1016", "bank transfer", "AR", "ARS", ("documentId",)),
    ("1019", "debit", "CL", "CLP", ()),
    ("1020", "card", "CL", "CLP", ()),
    ("1022", "cash agents", "PE", "PEN", ("userEmail",)),
    ("1023", "card", "PE", "PEN", ()),
    ("1024", "wallet", "PE", "PEN", ("userPhone",)),
    ("1025", "card", "US", "USD", ()),
    ("1026", "debit", "US", "USD", ()),
    ("1027", "Apple Pay", "US", "USD", ()),
    ("1028", "Google Pay", "US", "USD", ()),
    ("1029", "wire", "US", "USD", ("userName",)),
]


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: str  # may hold {payment}, {pending}, {paid}, {clabe}
    body: dict[str, Any] | None = None
    key: str = SK
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def pool(self) -> Literal["pending", "paid"] | None:
        """The pool each request takes its own target from (a payment is marked paid once; a
        refund takes a paid payment of its own), if any."""
        if "{pending}" in self.path:
            return "pending"
        if "{paid}" in self.path:
            return "paid"
        return None

    @property
    def fresh(self) -> bool:
        """Each request needs its own target."""
        return self.pool is not None

    @property
    def rail(self) -> bool:
        return self.name.startswith("POST /payments ")


def payment_body(method_id: str, country: str, currency: str, required: tuple[str, ...]) -> dict:
    body: dict[str, Any] = {
        "amount": AMOUNTS[currency],
        "currency": currency,
        "paymentMethodId": method_id,
    }
    values = {
        "userEmail": "buyer@example.com",
        "documentId": DOCUMENTS[country],
        "userPhone": PHONES.get(country, "+5215512345678"),
        "userName": "Ana Souza",
    }
    body.update({name: values[name] for name in required})
    return body


def operations() -> list[Operation]:
    ops = [
        Operation(f"POST /payments {rail} sandbox ({mid})", "POST", "/api/v1/payments", body)
        for mid, rail, country, currency, required in SANDBOX_RAILS
        for body in [payment_body(mid, country, currency, required)]
    ]
    ops += [
        Operation(
            f"POST /payments {rail} {country} ({mid})", "POST", "/api/v1/payments", body, LIVE_SK
        )
        for mid, rail, country, currency, required in PRODUCTION_RAILS
        for body in [payment_body(mid, country, currency, required)]
    ]
    hosted = payment_body("sbx_card", "US", "USD", ())
    hosted |= {"hostedCheckout": True, "returnUrl": "https://shop.example/orders/42"}
    hosted |= {"userName": "Ana Souza", "userEmail": "a@example.com", "documentId": "123456789"}
    ops += [
        Operation(
            "POST /payments card hosted checkout (sbx_card)", "POST", "/api/v1/payments", hosted
        ),
        Operation(
            "POST /checkout/sessions",
            "POST",
            "/api/v1/checkout/sessions",
            {
                "amount": 50,
                "country": "MX",
                "customer": {
                    "firstName": "Ana",
                    "lastName": "Souza",
                    "email": "a@example.com",
                    "phone": "+5215512345678",
                },
                "returnUrl": "https://shop.example/orders/42",
            },
        ),
        Operation(
            "POST /payments/{id}/refund",
            "POST",
            "/api/v1/payments/{paid}/refund",
            {"amount": 1},
        ),
        Operation(
            "POST /payments/{id}/simulate",
            "POST",
            "/api/v1/payments/{pending}/simulate",
            {"action": "paid"},
        ),
        Operation("GET /payments/{id}", "GET", "/api/v1/payments/{payment}"),
        Operation(
            "GET /payments?status=completed&limit=50",
            "GET",
            "/api/v1/payments?status=completed&limit=50",
        ),
        Operation(
            "GET /payments?paymentMethodId=sbx_spei&country=MX&limit=20",
            "GET",
            "/api/v1/payments?paymentMethodId=sbx_spei&country=MX&limit=20",
        ),
        Operation("GET /payment-methods", "GET", "/api/v1/payment-methods"),
        Operation("GET /me/balance", "GET", "/api/v1/me/balance"),
        Operation("GET /me/payout/balance", "GET", "/api/v1/me/payout/balance"),
        Operation(
            "POST /me/payout/send (sandbox SPEI)",
            "POST",
            "/api/v1/me/payout/send",
            {
                "methodId": "sbx_po_mx_spei",
                "amount": 500,
                "recipient": {
                    "name": "Ana López",
                    "account": "012180001183597198",
                    "documentType": "RFC",
                    "documentId": "IXLZ9511197B1",
                },
            },
        ),
        Operation("GET /me/payout/send", "GET", "/api/v1/me/payout/send?limit=20"),
        Operation(
            "POST /_sim/deposits", "POST", "/_sim/deposits", {"clabe": "{clabe}", "amount": 250}
        ),
        Operation("GET /me/deposit-accounts", "GET", "/api/v1/me/deposit-accounts"),
        Operation(
            "POST /auth/token", "POST", "/api/v1/auth/token", {"apiKey": PK, "secretKey": SK}
        ),
    ]
    return ops


SPEI = payment_body("sbx_spei", "MX", "MXN", ())


class Targets:
    """What the operations' paths and bodies refer to, made on a server through `call`."""

    def __init__(self, call: Call, pending: int = 0, paid: int = 0) -> None:
        """`pending` and `paid`: how many requests of the operations with `{pending}` and with
        `{paid}` the caller will make in all (each takes its own payment)."""
        self.call = call
        self.payment = self._pay(paid=True)
        self.paid = [self._pay(paid=True) for _ in range(paid)]
        # A refund is paid from the available balance: the payments settle first, and their
        # reserves are released (past the fixtures' longest settlement delay and reserve, 90
        # days): GET /me/balance lists every release still ahead, and a pool of paid payments
        # left in that list would make the balance row measure a schedule of thousands.
        status, raw = call("POST", "/_sim/clock/advance", {"seconds": 100 * 86_400}, SK)
        assert status == 200, raw[:300]
        self.pending = [self._pay(paid=False) for _ in range(pending)]
        status, raw = call(
            "POST",
            "/api/v1/me/deposit-accounts",
            {
                "endUserRef": "bench-1",
                "name": "Ana López",
                "email": "a@example.com",
                "phone": "+5215512345678",
                "depositMethodId": "dm_spei_stp",
            },
            SK,
        )
        assert status in (200, 201), raw[:300]
        account = json.loads(raw)
        self.clabe = next(v for k, v in _flat(account) if k.lower() == "clabe")
        self._paid = iter(self.paid)
        self._pending = iter(self.pending)

    def _pay(self, *, paid: bool, amount: int = 500) -> str:
        status, raw = self.call("POST", "/api/v1/payments", SPEI | {"amount": amount}, SK)
        assert status in (200, 201), raw[:300]
        tx_id = json.loads(raw)["transactionId"]
        if paid:
            path = f"/api/v1/payments/{tx_id}/simulate"
            status, raw = self.call("POST", path, {"action": "paid"}, SK)
            assert status in (200, 201), raw[:300]
        return tx_id

    def request(self, op: Operation) -> tuple[str, bytes | None]:
        """The path and the body of the next request of `op`."""
        path = op.path.replace("{payment}", self.payment)
        for name, pool in (("{paid}", self._paid), ("{pending}", self._pending)):
            if name in path:
                target = next(pool, None)
                if target is None:
                    raise SystemExit(f"{op.name}: its pool of {name} payments is used up")
                path = path.replace(name, target)
        if op.body is None:
            return path, None
        return path, json.dumps(op.body).replace("{clabe}", self.clabe).encode()


def _flat(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [kv for k, v in value.items() for kv in [(k, v), *_flat(v)]]
    if isinstance(value, list):
        return [kv for v in value for kv in _flat(v)]
    return []


def request_bytes(op: Operation, path: str, body: bytes | None) -> bytes:
    """The raw HTTP/1.1 request (what the in-process benchmarks write to their socket)."""
    head = f"{op.method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += f"Authorization: Bearer {op.key}\r\n"
    if body is None:
        return (head + "\r\n").encode()
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body
