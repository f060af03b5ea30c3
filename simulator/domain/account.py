"""Merchant identity (/me) and the pay-in balance view (/me/balance)."""

from __future__ import annotations

from typing import Any

from simulator.clock import isoformat
from simulator.domain.auth import Principal
from simulator.domain.catalog import Catalog
from simulator.domain.ledger import MOVEMENTS_SHOWN, Ledger
from simulator.domain.methods import shop_methods
from simulator.domain.money import dec


def identity(principal: Principal, catalog: Catalog) -> dict[str, Any]:
    merchant = principal.merchant
    shops = [principal.shop] if principal.shop else list(merchant.shops)
    slugs = sorted(
        {m.method for shop in shops for m in shop_methods(catalog, shop, principal.environment)}
    )
    return {
        "id": merchant.id,
        "name": merchant.name,
        "email": merchant.email,
        "industry": merchant.industry,
        "tier": merchant.tier,
        "trustScore": merchant.trust_score,
        "environment": principal.environment,
        "capabilities": {
            "checkout": merchant.checkout,
            "directCharge": merchant.direct_charge,
            "refunds": merchant.refunds,
            "webhooks": merchant.webhooks,
            "crypto": list(merchant.crypto),
            "methods": slugs,
        },
        "shop": {"id": principal.shop.id, "name": principal.shop.name} if principal.shop else None,
    }


WARNING_TYPES = {
    "uncovered_refund": "A provider refund exceeded the available balance; the shortfall was "
    "not debited.",
    "uncovered_chargeback": "A lost chargeback (or its fee) exceeded the available balance; the "
    "shortfall was not debited.",
}


def balance_view(principal: Principal, ledger: Ledger, now: float) -> dict[str, Any]:
    merchant = principal.merchant
    balance = ledger.balance(principal.scope, now)
    warnings = [
        {
            "type": m["type"],
            "transactionId": m["transactionId"],
            "message": WARNING_TYPES[m["type"]],
            "at": isoformat(m["createdAt"]),
        }
        for m in ledger.warnings(principal.scope)
    ]
    total_fees = balance.platform_fees + balance.flat_fees + balance.chargeback_fees
    return {
        "merchantId": merchant.id,
        "currency": "USD",
        "balance": {
            "available": balance.available,
            "pending": balance.pending,
            "frozen": balance.frozen,
            "reserve": balance.reserve,
        },
        "ledgerWarnings": warnings,
        "tier": merchant.tier,
        "trustScore": merchant.trust_score,
        "rollingReservePct": merchant.rolling_reserve_pct,
        "withdrawalFeeUsd": merchant.withdrawal_fee_usd,
        "feeSummary": {
            "grossVolume": balance.gross_volume,
            "platformFees": balance.platform_fees,
            "flatFees": balance.flat_fees,
            "chargebackFees": balance.chargeback_fees,
            "totalFees": total_fees,
            # Lost chargebacks leave the balance like refunds do, so they count here too.
            "netBalance": balance.gross_volume - total_fees - balance.refunds - balance.chargebacks,
        },
        "movements": [
            {
                "id": m["id"],
                "type": m["type"],
                "amount": dec(m["amount"]),
                "bucket": m["bucket"],
                "transactionId": m["transactionId"],
                "claimId": m["claimId"],
                "createdAt": isoformat(m["createdAt"]),
                "effectiveAt": isoformat(m["effectiveAt"]),
            }
            for m in reversed(ledger.latest(principal.scope, MOVEMENTS_SHOWN))
            if m["type"] not in WARNING_TYPES
        ],
        "reserveSchedule": balance.reserve_schedule,
    }
