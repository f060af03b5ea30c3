"""The stored shape of a new pay-in (`TransactionRecord`), priced: what every way a pay-in
arrives (a charge, a deposit) starts from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from simulator.domain.catalog import Environment, Merchant, PaymentMethod, Shop
from simulator.domain.fees import fees_for
from simulator.domain.fx import Conversion
from simulator.domain.views import icon_path

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord


class Arrival(TypedDict, total=False):
    """What the way a pay-in arrived decides of its record (a charge's request and route, a
    deposit's transfer), by the record's own keys; what is not given is `NOTHING_ARRIVED`'s.
    A dict display, not a keyword-built object: made on every payment, it is one C operation
    (a fifteen-keyword NamedTuple, with the record built from partial dicts, cost a payment
    4 % more in instructions, docs/performance.md)."""

    paymentFormPath: str | None
    paymentData: dict[str, str] | None  # None: the method alone (a hosted rail)
    hostedCheckout: bool
    returnUrl: str | None
    checkoutPath: str | None
    merchantOrderId: str | None
    tags: tuple[str | None, str | None, str | None]
    userName: str | None
    userEmail: str | None
    userPhone: str | None
    userIp: str | None
    providerId: str | None
    simulate: str | None
    dueAt: float | None  # None: created due
    expiresAt: float | None  # None: created expired


# Every key of `Arrival`, in the record's order, with the value of a pay-in that says nothing.
NOTHING_ARRIVED: Arrival = {
    "paymentFormPath": None,
    "paymentData": None,
    "hostedCheckout": False,
    "returnUrl": None,
    "checkoutPath": None,
    "merchantOrderId": None,
    "tags": (None, None, None),
    "userName": None,
    "userEmail": None,
    "userPhone": None,
    "userIp": None,
    "providerId": None,
    "simulate": None,
    "dueAt": None,
    "expiresAt": None,
}


def new_record(
    tx_id: str,
    merchant: Merchant,
    shop: Shop,
    environment: Environment,
    method: PaymentMethod,
    conversion: Conversion,
    country: str,
    now: float,
    arrival: Arrival,
    provider_token: str | None = None,
) -> TransactionRecord:
    """The stored shape of a pending pay-in. The keys keep one order (the stored JSON's, which
    a rendering cache and a state file see): `arrival`'s keys sit where NOTHING_ARRIVED puts
    them, whichever it gives."""
    input_amount = conversion.input_amount
    record: dict[str, Any] = {
        "id": tx_id,
        "merchantId": merchant.id,
        "shopId": shop.id,
        "environment": environment,
        "status": "pending",
        "amount": str(conversion.amount_usd),
        "inputCurrency": conversion.input_currency,
        "inputAmount": str(input_amount) if input_amount else None,
        "amountLocal": str(conversion.amount_local),
        "currencyLocal": conversion.currency_local,
        "paymentMethodId": method.id,
        "paymentMethod": method.method,
        "paymentMethodName": method.name,
        "iconPath": icon_path(method),
        "country": country,
        **_pricing(conversion, merchant, method),
        **NOTHING_ARRIVED,
        **arrival,
        "createdAt": now,
        "updatedAt": now,
        "refundedLocal": "0",
        "refundedUsd": "0",
        "chargebackClaimId": None,
    }
    # Replaced in place: each key keeps its position.
    record["tags"] = list(record["tags"])
    if record["paymentData"] is None:
        record["paymentData"] = {"method": method.method}
    if record["dueAt"] is None:
        record["dueAt"] = now
    if record["expiresAt"] is None:
        record["expiresAt"] = now
    if provider_token is not None:
        record["providerToken"] = provider_token
    return cast("TransactionRecord", record)


def _pricing(conversion: Conversion, merchant: Merchant, method: PaymentMethod) -> dict[str, Any]:
    platform, provider, network, reserve = fees_for(conversion.amount_usd, merchant, method)
    return {
        "fees": {
            "platform": str(platform),
            "provider": str(provider),
            "network": str(network),
            "total": str(platform + provider + network),
        },
        "reserve": str(reserve),
        "settlementDelay": f"T+{merchant.settlement_delay_days}",
    }
