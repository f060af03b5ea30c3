"""The payout account: the payout methods and currencies a merchant may use, and the payout
balance (fund-sandbox, transfer from the pay-in balance, swap between currencies, with their
quotes). Payouts themselves (their lifecycle) are `simulator.domain.payouts.service`.

Decisions (docs/decisions.md, "Payouts and deposit accounts"): payouts and their balance belong to
the merchant and environment (like /me/balance), whichever shop's key is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import Any

from simulator.clock import isoformat
from simulator.domain.auth import Principal, Scope
from simulator.domain.catalog import PayoutMethod, RecipientField
from simulator.domain.context import DomainContext
from simulator.domain.errors import ApiError, invalid_request
from simulator.domain.ledger import AVAILABLE as PAYIN_AVAILABLE
from simulator.domain.ledger import Ledger
from simulator.domain.money import ZERO, quantum, usd
from simulator.domain.payouts.ledger import (
    AVAILABLE,
    CurrencyBalance,
    PayoutLedger,
    sort_currencies,
)
from simulator.domain.payouts.request import (
    amount_invalid,
    parse_fund_request,
    parse_payout_amount,
    parse_swap_request,
    parse_transfer_request,
)
from simulator.domain.views import absolute

RATE_SHOWN = 8  # decimal places of `rate` / `midRate` in quotes (conversions use the exact rate)
HUNDRED = Decimal(100)


@dataclass(frozen=True, slots=True)
class Quote:
    source: str
    target: str
    amount: Decimal
    mid_rate: Decimal
    rate: Decimal  # mid rate less the markup: target units per source unit
    markup_pct: Decimal
    converted: Decimal

    def as_json(self) -> dict[str, Any]:
        shown = quantum(RATE_SHOWN)
        return {
            "from": self.source,
            "to": self.target,
            "amount": self.amount,
            "midRate": self.mid_rate.quantize(shown).normalize(),
            "rate": self.rate.quantize(shown).normalize(),
            "markupPct": self.markup_pct,
            "converted": self.converted,
        }


class PayoutAccount:
    def __init__(self, ctx: DomainContext, ledger: PayoutLedger) -> None:
        self.ctx = ctx
        self.ledger = ledger

    @property
    def payin_ledger(self) -> Ledger:
        return self.ctx.ledger

    # -- catalog -------------------------------------------------------------------------------

    def methods_for(self, environment: str) -> list[PayoutMethod]:
        """Synthetic rails first (sandbox only), then the real ones, in fixture order."""
        methods = self.ctx.catalog.payout_methods.values()
        synthetic = [m for m in methods if m.sandbox_only] if environment == "sandbox" else []
        return synthetic + [m for m in methods if not m.sandbox_only]

    def currencies_for(self, environment: str) -> list[str]:
        return sort_currencies({"USD"} | {m.currency for m in self.methods_for(environment)})

    def method(self, principal: Principal, method_id: Any) -> PayoutMethod:
        methods = {m.id: m for m in self.methods_for(principal.environment)}
        if not isinstance(method_id, str) or method_id not in methods:
            raise ApiError(
                "payout_method_unavailable",
                f"No payout method {method_id!r}; use an id from GET /me/payout/methods.",
                param="methodId",
                details={"methodId": method_id, "methodIds": list(methods)},
            )
        return methods[method_id]

    def method_entries(self, principal: Principal, base_url: str) -> list[dict[str, Any]]:
        balances = self.ledger.balances(principal.scope, self.ctx.now())
        entries = []
        for method in self.methods_for(principal.environment):
            entry = balances.get(method.currency)
            available = entry.available if entry else ZERO
            icon = absolute(base_url, f"/static/icons/{method.icon}")
            entries.append(
                {
                    "id": method.id,
                    "name": method.name,
                    "currency": method.currency,
                    "country": method.country,
                    "rail": method.rail,
                    "minUsd": method.min_usd,
                    "maxUsd": method.max_usd,
                    "logoUrl": icon,
                    "iconUrl": icon,
                    # A synthetic rail debits nothing, so it can always send.
                    "funded": method.sandbox_only or available > 0,
                    "currencyAvailable": available,
                    "recipientFields": [_field_json(f) for f in method.recipient_fields],
                }
            )
        return entries

    def currency_entries(self, principal: Principal) -> list[dict[str, Any]]:
        balances = self.ledger.balances(principal.scope, self.ctx.now())
        methods = self.methods_for(principal.environment)
        entries = []
        for currency in self.currencies_for(principal.environment):
            rails = [m for m in methods if m.currency == currency]
            available = balances[currency].available if currency in balances else ZERO
            entries.append(
                {
                    "currency": currency,
                    "country": rails[0].country if rails else "US",
                    "funded": available > 0,
                    "available": available,
                    "rails": [{"id": m.id, "rail": m.rail, "country": m.country} for m in rails],
                }
            )
        return entries

    # -- balance: fund, transfer, swap ---------------------------------------------------------

    def balance_entries(self, scope: Scope) -> list[dict[str, Any]]:
        balances = self.ledger.balances(scope, self.ctx.now())
        if "USD" not in balances:
            balances = {"USD": CurrencyBalance("USD"), **balances}
        return [entry.as_json() for entry in balances.values()]

    def balance_view(self, principal: Principal) -> dict[str, Any]:
        return {
            "merchantId": principal.merchant.id,
            "environment": principal.environment,
            "balances": self.balance_entries(principal.scope),
        }

    def fund_sandbox(self, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
        if principal.environment != "sandbox":
            raise ApiError("fund_sandbox_only")
        request = parse_fund_request(body)
        currency = self._payout_currency(principal, request.currency, "currency")
        amount = self.amount(request.amount, currency)
        now = self.ctx.now()
        self.ledger.record(principal.scope, currency, "sandbox_fund", amount, AVAILABLE, now=now)
        return {
            "currency": currency,
            "amount": amount,
            "balances": self.balance_entries(principal.scope),
        }

    def transfer(self, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
        """Move USD from the pay-in available balance to the payout USD balance, atomically."""
        amount = self.amount(parse_transfer_request(body), "USD")
        now = self.ctx.now()
        scope = principal.scope
        transfer_id = self._new_id("ptr_")
        # No await inside: the check and both movements are one atomic step of the caller's batch.
        available = self.payin_ledger.available(scope, now)
        if amount > available:
            raise self._insufficient(amount, available, "USD")
        self.payin_ledger.record(
            scope, "payout_transfer", -amount, PAYIN_AVAILABLE, effective_at=now, now=now
        )
        self.ledger.record(scope, "USD", "transfer_in", amount, AVAILABLE, now=now, ref=transfer_id)
        payin_after = self.payin_ledger.available(scope, now)
        return {
            "id": transfer_id,
            "amount": amount,
            "currency": "USD",
            "payinAvailable": payin_after,
            "balances": self.balance_entries(scope),
            "createdAt": isoformat(now),
        }

    def quote(
        self,
        principal: Principal,
        source: Any,
        target: Any,
        amount: Any,
        *,
        from_query: bool = False,
    ) -> Quote:
        """A swap at the fixture's rates less the markup; `converted` rounds down (never invents
        money). Rates are static, so a quote holds until the fixtures change."""
        source = self._payout_currency(principal, source, "from")
        target = self._payout_currency(principal, target, "to")
        if source == target:
            raise invalid_request(
                "`from` and `to` must be different currencies.",
                [{"path": "to", "message": "same as from"}],
                param="to",
            )
        value = self.amount(amount, source, from_query=from_query)
        fx = self.ctx.fx
        mid = fx.rate(target) / fx.rate(source)
        rate = mid * (1 - fx.markup_pct / HUNDRED)
        converted = (value * rate).quantize(quantum(fx.decimals(target)), rounding=ROUND_DOWN)
        if converted <= 0:
            raise amount_invalid(
                f"{value} {source} converts to less than the smallest unit of {target}.",
                converted=converted,
            )
        return Quote(source, target, value, mid, rate, fx.markup_pct, converted)

    def swap(self, principal: Principal, body: dict[str, Any]) -> dict[str, Any]:
        request = parse_swap_request(body)
        quote = self.quote(principal, request.source, request.target, request.amount)
        now = self.ctx.now()
        scope = principal.scope
        swap_id = self._new_id("psw_")
        self.check_funds(scope, quote.source, quote.amount, now)
        record = self.ledger.record
        record(scope, quote.source, "swap_out", -quote.amount, AVAILABLE, now=now, ref=swap_id)
        record(scope, quote.target, "swap_in", quote.converted, AVAILABLE, now=now, ref=swap_id)
        return {
            "id": swap_id,
            **quote.as_json(),
            "balances": self.balance_entries(scope),
            "createdAt": isoformat(now),
        }

    # -- helpers -------------------------------------------------------------------------------

    def check_funds(self, scope: Scope, currency: str, amount: Decimal, now: float) -> None:
        available = self.ledger.available(scope, currency, now)
        if available <= 0:
            raise ApiError(
                "currency_not_funded",
                f"There is no payout balance in {currency}: fund it, transfer USD or swap first.",
                param="amount",
                details={"currency": currency, "available": available},
            )
        if amount > available:
            raise self._insufficient(amount, available, currency)

    def _insufficient(self, amount: Decimal, available: Decimal, currency: str) -> ApiError:
        shortfall = amount - available
        return ApiError(
            "balance_insufficient",
            f"{amount} {currency} exceeds the available {available} {currency}.",
            param="amount",
            details={
                "reason": "exceeds_available",
                "currency": currency,
                "available": available,
                "shortfall": shortfall,
                "availableUsd": self._usd(available, currency),
                "shortfallUsd": self._usd(shortfall, currency),
            },
        )

    def _usd(self, amount: Decimal, currency: str) -> Decimal:
        return usd(amount / self.ctx.fx.rate(currency))

    def _payout_currency(self, principal: Principal, value: Any, param: str) -> str:
        if value is None:
            raise ApiError("missing_field", f"`{param}` is required.", param=param)
        currency = self.ctx.fx.check_currency(value, param=param)
        allowed = self.currencies_for(principal.environment)
        if currency not in allowed:
            raise invalid_request(
                f"{currency} is not a payout currency; use one of {', '.join(allowed)}.",
                [{"path": param, "message": "not a payout currency"}],
                param=param,
                currencies=allowed,
            )
        return currency

    def amount(self, raw: Any, currency: str, *, from_query: bool = False) -> Decimal:
        """`raw` as an amount of `currency` (payouts.request.parse_payout_amount says the rules)."""
        decimals = self.ctx.fx.decimals(currency)
        return parse_payout_amount(raw, currency, decimals, from_query=from_query)

    def _new_id(self, prefix: str) -> str:
        # From the app's generator, like transaction ids (reproducible under a seed).
        return f"{prefix}{self.ctx.rng.getrandbits(96):024x}"


def _field_json(field: RecipientField) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "key": field.key,
        "label": field.label,
        "required": field.required,
        "type": field.type,
    }
    if field.options is not None:
        entry["options"] = [{"value": o.value, "label": o.label} for o in field.options]
    return entry
