"""The stored shape of a new pay-in (`TransactionRecord`), priced: what every way a pay-in
arrives (a charge, a deposit) starts from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, cast

from simulator.domain.catalog import Environment, Merchant, PaymentMethod, Shop
from simulator.domain.fees import fees_for
from simulator.domain.fx import Conversion
from simulator.domain.views import icon_path

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord


class Arrival(NamedTuple):
    """What the way a pay-in arrived decides of its record (a charge's request and route, a
    deposit's transfer); what is not given is the record's default."""

    payment_data: dict[str, str] | None = None
    payment_form_path: str | None = None
    provider_token: str | None = None
    hosted_checkout: bool = False
    return_url: str | None = None
    checkout_path: str | None = None
    merchant_order_id: str | None = None
    tags: tuple[str | None, str | None, str | None] = (None, None, None)
    user_name: str | None = None
    user_email: str | None = None
    user_phone: str | None = None
    user_ip: str | None = None
    provider_id: str | None = None
    simulate: str | None = None
    due_at: float | None = None
    expires_at: float | None = None


NOTHING_DECIDED = Arrival()


def new_record(
    tx_id: str,
    merchant: Merchant,
    shop: Shop,
    environment: Environment,
    method: PaymentMethod,
    conversion: Conversion,
    country: str,
    now: float,
    arrival: Arrival = NOTHING_DECIDED,
) -> TransactionRecord:
    """The stored shape of a pending pay-in. The keys keep one order (the stored JSON's, which
    a rendering cache and a state file see): identity, amounts, method, pricing, what the
    arrival decided, then the record's own bookkeeping."""
    record: dict[str, Any] = {
        "id": tx_id,
        "merchantId": merchant.id,
        "shopId": shop.id,
        "environment": environment,
        "status": "pending",
        **_amounts(conversion),
        **_method_fields(method, country),
        **_pricing(conversion, merchant, method),
        **_arrival_fields(arrival, method, now),
        "createdAt": now,
        "updatedAt": now,
        "refundedLocal": "0",
        "refundedUsd": "0",
        "chargebackClaimId": None,
    }
    if arrival.provider_token is not None:
        record["providerToken"] = arrival.provider_token
    return cast("TransactionRecord", record)


def _amounts(conversion: Conversion) -> dict[str, Any]:
    input_amount = conversion.input_amount
    return {
        "amount": str(conversion.amount_usd),
        "inputCurrency": conversion.input_currency,
        "inputAmount": str(input_amount) if input_amount else None,
        "amountLocal": str(conversion.amount_local),
        "currencyLocal": conversion.currency_local,
    }


def _method_fields(method: PaymentMethod, country: str) -> dict[str, Any]:
    return {
        "paymentMethodId": method.id,
        "paymentMethod": method.method,
        "paymentMethodName": method.name,
        "iconPath": icon_path(method),
        "country": country,
    }


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


def _arrival_fields(arrival: Arrival, method: PaymentMethod, now: float) -> dict[str, Any]:
    payment_data = arrival.payment_data
    return {
        "paymentFormPath": arrival.payment_form_path,
        "paymentData": {"method": method.method} if payment_data is None else payment_data,
        "hostedCheckout": arrival.hosted_checkout,
        "returnUrl": arrival.return_url,
        "checkoutPath": arrival.checkout_path,
        "merchantOrderId": arrival.merchant_order_id,
        "tags": list(arrival.tags),
        "userName": arrival.user_name,
        "userEmail": arrival.user_email,
        "userPhone": arrival.user_phone,
        "userIp": arrival.user_ip,
        "providerId": arrival.provider_id,
        "simulate": arrival.simulate,
        "dueAt": now if arrival.due_at is None else arrival.due_at,
        "expiresAt": now if arrival.expires_at is None else arrival.expires_at,
    }
