"""The stored shape of a new pay-in (`TransactionRecord`), priced: what every way a pay-in
arrives (a charge, a deposit) starts from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from simulator.domain.catalog import Environment, Merchant, PaymentMethod, Shop
from simulator.domain.fees import fees_for
from simulator.domain.fx import Conversion
from simulator.domain.views import icon_path

if TYPE_CHECKING:
    from simulator.domain.records import TransactionFields, TransactionRecord


def new_record(
    tx_id: str,
    merchant: Merchant,
    shop: Shop,
    environment: Environment,
    method: PaymentMethod,
    conversion: Conversion,
    *,
    country: str,
    now: float,
    **fields: Unpack[TransactionFields],
) -> TransactionRecord:
    """The stored shape of a pending pay-in; `fields` set what the way it arrived decides."""
    fees = fees_for(conversion.amount_usd, merchant, method)
    record: TransactionRecord = {
        "id": tx_id,
        "merchantId": merchant.id,
        "shopId": shop.id,
        "environment": environment,
        "status": "pending",
        "amount": str(conversion.amount_usd),
        "inputCurrency": conversion.input_currency,
        "inputAmount": str(conversion.input_amount) if conversion.input_amount else None,
        "amountLocal": str(conversion.amount_local),
        "currencyLocal": conversion.currency_local,
        "paymentMethodId": method.id,
        "paymentMethod": method.method,
        "paymentMethodName": method.name,
        "iconPath": icon_path(method),
        "country": country,
        "fees": {
            "platform": str(fees.platform),
            "provider": str(fees.provider),
            "network": str(fees.network),
            "total": str(fees.total),
        },
        "reserve": str(fees.reserve),
        "settlementDelay": f"T+{merchant.settlement_delay_days}",
        "paymentFormPath": None,
        "paymentData": {"method": method.method},
        "hostedCheckout": False,
        "returnUrl": None,
        "checkoutPath": None,
        "merchantOrderId": None,
        "tags": [None, None, None],
        "userName": None,
        "userEmail": None,
        "userPhone": None,
        "userIp": None,
        "providerId": None,
        "simulate": None,
        "dueAt": now,
        "expiresAt": now,
        "createdAt": now,
        "updatedAt": now,
        "refundedLocal": "0",
        "refundedUsd": "0",
        "chargebackClaimId": None,
    }
    unknown = fields.keys() - record.keys()
    if unknown:
        raise ValueError(f"not transaction fields: {sorted(unknown)}")
    record.update(fields)
    return record
