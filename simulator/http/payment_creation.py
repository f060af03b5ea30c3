"""The operation behind POST /payments, as the Idempotency-Key wraps it.

The handler reads the request and hands this operation, with everything it needs, to the
idempotency cache, which runs it (or replays its stored answer) without calling back into the
handler: one unit of work, the payment and the key's record in one commit. A request without a
key has nothing to replay or keep: the handler runs the operation itself, with `NO_KEY`.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from simulator.domain.auth import Principal, resolve_shop
from simulator.domain.payins.request import PaymentRequest, check_payment_rules
from simulator.domain.payins.service import PaymentService
from simulator.http.aiohttp_private import app_state
from simulator.http.idempotency import NO_KEY, KeyHold, Stored
from simulator.http.keys import CATALOG, PAYMENTS, STORE
from simulator.jsonio import dumps


async def create_payment(
    app: web.Application,
    principal: Principal,
    payment: PaymentRequest,
    simulate: str | None,
    request_ip: str | None,
    origin: str,
    hold: KeyHold,
) -> Stored:
    """Make the payment and its answer; the key's response joins the payment's own commit, so
    no crash can keep one without the other."""
    check_payment_rules(payment)
    services: dict[Any, Any] = app_state(app)  # a dict's items: no mapping method calls
    shop = resolve_shop(principal, services[CATALOG], payment.shop_id)
    payments: PaymentService = services[PAYMENTS]
    with services[STORE].batch():
        tx = payments.create(principal, shop, payment, simulate=simulate, request_ip=request_ip)
        payload = dumps(payments.view(tx, origin, on_create=True))
        if hold is not NO_KEY:  # nothing to keep without a key
            hold.complete(200, payload)
    return 200, payload
