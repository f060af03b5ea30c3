"""The payment-method listing a shop sees: its enabled catalog entries plus sandbox built-ins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.domain.catalog import Catalog, Environment, PaymentMethod, Shop
from simulator.domain.views import absolute, icon_path

CHANNELS = ("ONLINE", "CASH", "CREDIT_CARD")


@dataclass(frozen=True, slots=True)
class MethodFilters:
    country: str | None = None  # ISO-3
    channel: str | None = None
    method: str | None = None

    def matches(self, entry: PaymentMethod) -> bool:
        return (
            (self.country is None or entry.country_iso3 == self.country)
            and (self.channel is None or entry.channel == self.channel)
            and (self.method is None or entry.method == self.method)
        )


def shop_methods(catalog: Catalog, shop: Shop, environment: Environment) -> list[PaymentMethod]:
    methods = [catalog.methods[mid] for mid in shop.enabled_method_ids if mid in catalog.methods]
    methods = [m for m in methods if not m.sandbox_only]
    if environment == "sandbox":
        methods += [m for m in catalog.methods.values() if m.sandbox_only]
    return methods


def method_entry(method: PaymentMethod, base_url: str) -> dict[str, Any]:
    icon = icon_path(method)
    return {
        "paymentMethodId": method.id,
        "method": method.method,
        "methodLabel": method.method_label,
        "name": method.name,
        "country": method.country_iso2,
        "countryIso3": method.country_iso3,
        "channel": method.channel,
        "imageUrl": icon,
        "iconUrl": absolute(base_url, icon),
        "currencies": list(method.currencies),
        "currencyLimits": [
            {"currency": lim.currency, "min": lim.min, "max": lim.max}
            for lim in method.currency_limits
        ],
        "minTxUsd": method.min_tx_usd,
        "maxTxUsd": method.max_tx_usd,
        "fee": {"percent": method.fee_percent, "flat": method.fee_flat, "currency": "USD"},
        "enabled": method.enabled,
        "online": method.online,
        "routable": method.routable,
        "unroutableReason": None if method.routable else method.unroutable_reason,
    }


def list_methods(
    catalog: Catalog,
    shop: Shop,
    environment: Environment,
    filters: MethodFilters,
    base_url: str,
) -> dict[str, Any]:
    available = shop_methods(catalog, shop, environment)
    chosen = [m for m in available if filters.matches(m)]
    return {
        "shop": {"id": shop.id, "name": shop.name},
        "environment": environment,
        "filters": {
            "country": filters.country,
            "channel": filters.channel,
            "method": filters.method,
        },
        "count": len(chosen),
        "totalAvailable": len(available),
        "routableCount": sum(1 for m in chosen if m.routable),
        "methods": [method_entry(m, base_url) for m in chosen],
    }


def method_requirements(catalog: Catalog, shop: Shop, environment: Environment) -> dict[str, Any]:
    """What each method of the shop's listing needs beyond the spec's catalog entry: how it
    collects (direct instructions or a hosted page), the buyer fields it asks for by name (the
    items a `missing_required_fields` answer would carry) and its payment deadline. For the
    CLI's `payorch methods`; the listing itself stays the spec's (GET /payment-methods)."""
    return {
        "data": [
            {
                "paymentMethodId": method.id,
                "flow": method.flow,
                "requiredFields": [
                    {"key": f.key, "type": f.type, "label": f.label, "help": f.help}
                    for f in method.required_fields
                ],
                "dueHours": method.due_hours,
            }
            for method in shop_methods(catalog, shop, environment)
        ]
    }
