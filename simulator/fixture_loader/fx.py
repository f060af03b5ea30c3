"""fx.yaml: the FX markup, the USD rates and each currency's minor-unit digits."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from simulator.domain.catalog import FxTable
from simulator.fixture_loader.fields import Fields

# A currency code, as every fixture file writes one; fx.yaml says which exist.
CURRENCY = re.compile(r"[A-Z]{3}")


def load(file: str, data: Any) -> FxTable:
    top = Fields(file, "(top level)", data, required=["markupPct", "usdRates", "decimals"])
    markup = top.decimal("markupPct", Decimal(0), Decimal(100))
    rates_map = Fields(file, "usdRates", top.raw("usdRates"), (), any_keys=True)
    decimals_map = Fields(file, "decimals", top.raw("decimals"), (), any_keys=True)
    rates: dict[str, Decimal] = {}
    for currency in rates_map.data:
        if not isinstance(currency, str) or not CURRENCY.fullmatch(currency):
            rates_map.fail(f"{currency!r} is not a 3-letter ISO-4217 code")
        # A zero rate would divide by zero in every conversion.
        rates[currency] = rates_map.decimal(currency, Decimal("0.000001"))
    digits: dict[str, int] = {}
    for currency in decimals_map.data:
        if currency not in rates:
            decimals_map.fail("has decimals but no rate in usdRates", str(currency))
        digits[currency] = decimals_map.integer(currency, 0, 4)
    for currency in rates:
        if currency not in digits:
            decimals_map.fail(f"missing entry for {currency} (it has a rate)")
    if rates.get("USD") != Decimal(1):
        rates_map.fail("must be 1 (USD is the settlement currency)", "USD")
    return FxTable(markup_pct=markup, usd_rates=rates, decimals=digits)
