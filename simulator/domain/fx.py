"""FX: presentment currency -> USD headline (with markup), USD -> the buyer's local currency.

Decisions (docs/decisions.md): the markup is charged once, on the presentment leg, and borne by the
merchant. When the presentment currency is already the rail's local currency the buyer pays exactly
what was asked (`amountLocal` = `inputAmount`).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from simulator.domain.catalog import FxTable
from simulator.domain.errors import ApiError, invalid_request
from simulator.domain.money import CENT, has_decimals_at_most, round_to, usd

ISO4217 = re.compile(r"[A-Z]{3}")
CURRENCY_PROBLEM = "expected a 3-letter upper-case ISO-4217 code"
HUNDRED = Decimal(100)
ONE = Decimal(1)


class Conversion(NamedTuple):
    """Made on every payment: a NamedTuple is built in a fraction of a frozen dataclass's time."""

    amount_usd: Decimal
    input_currency: str | None
    input_amount: Decimal | None
    amount_local: Decimal
    currency_local: str


class Fx:
    def __init__(self, table: FxTable) -> None:
        self._table = table

    @property
    def markup_pct(self) -> Decimal:
        return self._table.markup_pct

    def decimals(self, currency: str) -> int:
        return self._table.decimals.get(currency, 2)

    def check_precision(self, amount: Decimal, currency: str) -> None:
        """400 amount_invalid for an amount with more decimals than `currency` has (10.005 USD,
        10.5 CLP): it would otherwise be rounded silently into a charge nobody asked for."""
        decimals = self._table.decimals.get(currency, 2)  # `decimals`, one call less a payment
        if not has_decimals_at_most(amount, decimals):
            raise ApiError(
                "amount_invalid",
                f"{currency} amounts have {decimals} decimal places at most; got {amount}.",
                param="amount",
                details={"currency": currency, "decimals": decimals},
            )

    def check_currency(self, value: object, *, param: str = "currency") -> str:
        """An ISO-4217 code as the standard writes it: three upper-case letters (`usd`, ` USD`
        and an empty string are refused, not repaired; see docs/decisions.md)."""
        if not isinstance(value, str) or not ISO4217.fullmatch(value):
            raise invalid_request(
                f"`{param}` must be a 3-letter upper-case ISO-4217 code (e.g. USD).",
                [{"path": param, "message": CURRENCY_PROBLEM}],
                param=param,
            )
        return value

    def rate(self, currency: str) -> Decimal:
        if currency == "USD":
            return ONE
        rate = self._table.usd_rates.get(currency)
        if rate is None:
            raise ApiError(
                "fx_unavailable",
                f"No FX rate for {currency}; use USD or a supported currency.",
                param="currency",
                details={"currency": currency},
            )
        return rate

    def to_usd_headline(self, amount: Decimal, currency: str) -> Decimal:
        """Presentment -> USD at the rate minus the markup (unrounded)."""
        if currency == "USD":
            return amount
        return amount / self.rate(currency) * (1 - self._table.markup_pct / HUNDRED)

    def convert(
        self,
        amount: Decimal,
        currency: str,
        local_currency: str,
        headline: Decimal | None = None,
    ) -> Conversion:
        """`amount` in `currency` as the USD headline and the local amount; `headline` is
        `to_usd_headline(amount, currency)` when the caller has it already (unrounded)."""
        if headline is None:
            headline = self.to_usd_headline(amount, currency)
        headline = headline.quantize(CENT, ROUND_HALF_UP)  # `usd`, inline (on every payment)
        decimals = self._table.decimals.get(local_currency, 2)
        if currency == local_currency:
            local = round_to(amount, decimals)
        else:
            local = round_to(headline * self.rate(local_currency), decimals)
        # Positional: a NamedTuple called with keywords costs several times as much.
        if currency != "USD":
            return Conversion(headline, currency, amount, local, local_currency)
        return Conversion(headline, None, None, local, local_currency)

    def local_to_usd(self, amount_local: Decimal, currency_local: str) -> Decimal:
        """Mid-rate conversion for refunds (which are in the transaction's local currency)."""
        return usd(amount_local / self.rate(currency_local))
