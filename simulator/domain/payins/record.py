"""The stored shape of a new pay-in (`TransactionRecord`), priced: what every way a pay-in
arrives (a charge, a deposit) starts from."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from simulator.domain.catalog import Environment, Merchant, PaymentMethod, Shop
from simulator.domain.fees import fees_for
from simulator.domain.fx import Conversion
from simulator.domain.views import icon_path

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord


class Arrival(TypedDict):
    """What the way a pay-in arrived decides of its record (a charge's request and route, a
    deposit's transfer), by the record's own keys and in its order: every key, so the record takes
    them as they are, with no defaults merged in and no value mended after. A dict display, not a
    keyword-built object: made on every payment, it is one C operation (a fifteen-keyword
    NamedTuple, with the record built from partial dicts, cost a payment 4 % more in
    instructions, docs/performance.md)."""

    paymentFormPath: str | None
    paymentData: dict[str, str]  # a hosted rail's: the method alone
    hostedCheckout: bool
    returnUrl: str | None
    checkoutPath: str | None
    merchantOrderId: str | None
    tags: list[str | None]
    userName: str | None
    userEmail: str | None
    userPhone: str | None
    userIp: str | None
    providerId: str | None
    simulate: str | None
    dueAt: float
    expiresAt: float


def transfer_arrival(
    now: float,
    payment_data: dict[str, str],
    *,
    user_name: str | None,
    user_email: str | None,
    provider_id: str | None,
) -> Arrival:
    """A transfer received (a deposit): its instructions and payer, no page, no order, due and
    expired the moment it arrives (it arrives paid)."""
    return {
        "paymentFormPath": None,
        "paymentData": payment_data,
        "hostedCheckout": False,
        "returnUrl": None,
        "checkoutPath": None,
        "merchantOrderId": None,
        "tags": [None, None, None],
        "userName": user_name,
        "userEmail": user_email,
        "userPhone": None,
        "userIp": None,
        "providerId": provider_id,
        "simulate": None,
        "dueAt": now,
        "expiresAt": now,
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
    a rendering cache and a state file see): `arrival`'s sit in the middle, in its order."""
    input_amount = conversion.input_amount
    platform, provider, network, reserve = fees_for(conversion.amount_usd, merchant, method)
    record: TransactionRecord = {
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
        "fees": {
            "platform": str(platform),
            "provider": str(provider),
            "network": str(network),
            "total": str(platform + provider + network),
        },
        "reserve": str(reserve),
        "settlementDelay": f"T+{merchant.settlement_delay_days}",
        **arrival,
        "createdAt": now,
        "updatedAt": now,
        "refundedLocal": "0",
        "refundedUsd": "0",
        "chargebackClaimId": None,
    }
    if provider_token is not None:
        record["providerToken"] = provider_token
    return record
