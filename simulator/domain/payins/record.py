"""The stored shape of a new pay-in (`TransactionRecord`), priced: what every way a pay-in
arrives (a charge, a deposit) starts from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.domain.catalog import Environment, Merchant, PaymentMethod, Shop
from simulator.domain.fees import fees_for
from simulator.domain.fx import Conversion
from simulator.domain.views import icon_path

if TYPE_CHECKING:
    from simulator.domain.records import TransactionRecord


def new_record(
    tx_id: str,
    merchant: Merchant,
    shop: Shop,
    environment: Environment,
    method: PaymentMethod,
    conversion: Conversion,
    country: str,
    now: float,
    payment_data: dict[str, str] | None = None,
    payment_form_path: str | None = None,
    provider_token: str | None = None,
    hosted_checkout: bool = False,
    return_url: str | None = None,
    checkout_path: str | None = None,
    merchant_order_id: str | None = None,
    tags: tuple[str | None, str | None, str | None] = (None, None, None),
    user_name: str | None = None,
    user_email: str | None = None,
    user_phone: str | None = None,
    user_ip: str | None = None,
    provider_id: str | None = None,
    simulate: str | None = None,
    due_at: float | None = None,
    expires_at: float | None = None,
) -> TransactionRecord:
    """The stored shape of a pending pay-in; the parameters after `now` set what the way it
    arrived decides, in the record's key order (each in its place: the record is made once, with
    no second pass over it). A payment passes them by position: twenty keywords cost a Python
    call eight times as much as twenty positions."""
    fees = fees_for(conversion.amount_usd, merchant, method)
    platform, provider, network, reserve = fees
    input_amount = conversion.input_amount
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
        "paymentFormPath": payment_form_path,
        "paymentData": {"method": method.method} if payment_data is None else payment_data,
        "hostedCheckout": hosted_checkout,
        "returnUrl": return_url,
        "checkoutPath": checkout_path,
        "merchantOrderId": merchant_order_id,
        "tags": list(tags),
        "userName": user_name,
        "userEmail": user_email,
        "userPhone": user_phone,
        "userIp": user_ip,
        "providerId": provider_id,
        "simulate": simulate,
        "dueAt": now if due_at is None else due_at,
        "expiresAt": now if expires_at is None else expires_at,
        "createdAt": now,
        "updatedAt": now,
        "refundedLocal": "0",
        "refundedUsd": "0",
        "chargebackClaimId": None,
    }
    if provider_token is not None:
        record["providerToken"] = provider_token
    return record
