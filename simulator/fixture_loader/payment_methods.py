"""payment_methods.yaml: the pay-in methods, their limits, fees, buyer fields and providers."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from simulator.domain.catalog import (
    CurrencyLimit,
    FxTable,
    PaymentMethod,
    Provider,
    RequiredField,
)
from simulator.fixture_loader.fields import Fields, entries, unique_id
from simulator.fixture_loader.files import FX_FILE, ICON_NAME, PROVIDERS_FILE, has_icon
from simulator.fixture_loader.fx import CURRENCY
from simulator.fixture_loader.providers import METHOD_SLUGS, PROVIDER_ID

METHOD_ID = re.compile(r"\d{4}|sbx_[a-z0-9_]+")
# Buyer fields of POST /payments a rail may demand.
REQUIRED_FIELD_KEYS = frozenset({"userName", "userEmail", "documentId", "userPhone"})
REQUIRED_FIELD_TYPES = frozenset({"string", "email", "document", "phone"})
_FIRST_METHOD_ID = 1001

_METHOD_REQUIRED = [
    "id",
    "method",
    "name",
    "methodLabel",
    "country",
    "countryIso3",
    "channel",
    "flow",
    "currencies",
    "currencyLimits",
    "minTxUsd",
    "maxTxUsd",
    "fee",
    "enabled",
    "online",
    "routable",
    "icon",
    "requiredFields",
    "dueHours",
    "providers",
]
_METHOD_OPTIONAL = ("unroutableReason", "sandboxOnly")


def load(
    file: str, data: Any, providers: dict[str, Provider], fx: FxTable
) -> dict[str, PaymentMethod]:
    methods: dict[str, PaymentMethod] = {}
    countries = _CountryPairs()
    for where, raw in entries(file, data, "paymentMethods"):
        f = Fields(file, where, raw, required=_METHOD_REQUIRED, optional=_METHOD_OPTIONAL)
        method = _load_method(f, methods, countries, providers, fx)
        methods[method.id] = method
    return methods


class _CountryPairs:
    """The ISO-2 / ISO-3 pairs seen so far: one ISO-2 code per ISO-3 code and back, so country
    filters normalize unambiguously."""

    def __init__(self) -> None:
        self.iso3_of: dict[str, str] = {}
        self.iso2_of: dict[str, str] = {}

    def check(self, f: Fields) -> tuple[str, str]:
        iso2 = f.text("country", re.compile(r"[A-Z]{2}"))
        iso3 = f.text("countryIso3", re.compile(r"[A-Z]{3}"))
        if (
            self.iso3_of.setdefault(iso2, iso3) != iso3
            or self.iso2_of.setdefault(iso3, iso2) != iso2
        ):
            f.fail(f"{iso2}/{iso3} contradicts an earlier method's country pair", "countryIso3")
        return iso2, iso3


def _load_method(
    f: Fields,
    methods: dict[str, PaymentMethod],
    countries: _CountryPairs,
    providers: dict[str, Provider],
    fx: FxTable,
) -> PaymentMethod:
    """One method, its fields checked in the file's order (the first problem is reported)."""
    ident, sandbox_only = _load_id(f, methods)
    slug = f.choice("method", sorted(METHOD_SLUGS))
    iso2, iso3 = countries.check(f)
    currencies = _load_currencies(f, fx)
    limits = _load_limits(f, currencies)
    min_usd, max_usd = _load_usd_bounds(f)
    fee = Fields(f.file, f.at("fee"), f.raw("fee"), required=["percent", "flat", "currency"])
    fee.choice("currency", ("USD",))  # fees are charged in the settlement currency
    routable = f.boolean("routable")
    reason = f.opt_text("unroutableReason")
    if routable == (reason is not None):
        f.fail("give a reason exactly when routable is false", "unroutableReason")
    icon = f.opt_text("icon", ICON_NAME)
    if icon is not None and not has_icon(icon):
        f.fail(f"no icon file {icon!r} in simulator/static/icons", "icon")
    provider_ids = _load_provider_ids(f, providers, slug)
    return PaymentMethod(
        id=ident,
        method=slug,
        name=f.text("name"),
        method_label=f.text("methodLabel"),
        country_iso2=iso2,
        country_iso3=iso3,
        channel=f.choice("channel", ("ONLINE", "CASH", "CREDIT_CARD")),
        flow=f.choice("flow", ("direct", "hosted")),
        currencies=tuple(currencies),
        currency_limits=limits,
        min_tx_usd=min_usd,
        max_tx_usd=max_usd,
        fee_percent=fee.decimal("percent", Decimal(0), Decimal(100)),
        fee_flat=fee.decimal("flat", Decimal(0)),
        enabled=f.boolean("enabled"),
        online=f.boolean("online"),
        routable=routable,
        unroutable_reason=reason,
        icon=icon,
        required_fields=_load_required_fields(f),
        due_hours=f.integer("dueHours", 1),
        provider_ids=tuple(provider_ids),
        sandbox_only=sandbox_only,
    )


def _load_id(f: Fields, methods: dict[str, PaymentMethod]) -> tuple[str, bool]:
    """The method's id, unique, and whether it is a sandbox built-in (`sbx_*`, and only those)."""
    ident = f.text("id", METHOD_ID, id_like=True)
    unique_id(f, ident, methods)
    sandbox_only = f.boolean("sandboxOnly", False)
    if ident.startswith("sbx_") != sandbox_only:
        f.fail("sbx_* ids and only they must say sandboxOnly: true", "sandboxOnly")
    if not sandbox_only and int(ident) < _FIRST_METHOD_ID:
        f.fail(f"4-digit ids start at {_FIRST_METHOD_ID}", "id")
    return ident, sandbox_only


def _load_currencies(f: Fields, fx: FxTable) -> list[str]:
    currencies = f.strings("currencies", CURRENCY)
    if not currencies:
        f.fail("needs at least one currency (the local one first)", "currencies")
    for currency in currencies:
        if currency not in fx.usd_rates:
            f.fail(f"{currency} has no rate in {FX_FILE}", "currencies")
    return currencies


def _load_usd_bounds(f: Fields) -> tuple[Decimal | None, Decimal | None]:
    min_usd = f.opt_decimal("minTxUsd", Decimal(0))
    max_usd = f.opt_decimal("maxTxUsd", Decimal(0))
    if min_usd is not None and max_usd is not None and min_usd > max_usd:
        f.fail(f"minTxUsd {min_usd} is above maxTxUsd {max_usd}", "maxTxUsd")
    return min_usd, max_usd


def _load_provider_ids(f: Fields, providers: dict[str, Provider], slug: str) -> list[str]:
    """The rail's providers, in cascade order: known pay-in providers that serve the rail."""
    provider_ids = f.strings("providers", PROVIDER_ID)
    for provider_id in provider_ids:
        provider = providers.get(provider_id)
        if provider is None:
            f.fail(f"unknown provider {provider_id!r} (not in {PROVIDERS_FILE})", "providers")
        if provider.kind != "payin":
            f.fail(f"provider {provider_id!r} is a payout provider", "providers")
        if slug not in provider.rails:
            f.fail(f"provider {provider_id!r} does not serve rail {slug!r}", "providers")
    return provider_ids


def _load_limits(f: Fields, currencies: list[str]) -> tuple[CurrencyLimit, ...]:
    limits: list[CurrencyLimit] = []
    for i, raw in enumerate(f.items("currencyLimits")):
        item = Fields(f.file, f"{f.at('currencyLimits')}[{i}]", raw, ["currency", "min", "max"])
        currency = item.text("currency", CURRENCY)
        if currency not in currencies:
            item.fail(f"{currency} is not among the method's currencies", "currency")
        if any(limit.currency == currency for limit in limits):
            item.fail(f"second limit for {currency}", "currency")
        low = item.decimal("min", Decimal(0))
        high = item.decimal("max", low)
        limits.append(CurrencyLimit(currency=currency, min=low, max=high))
    for currency in currencies:
        if not any(limit.currency == currency for limit in limits):
            f.fail(f"no limit for {currency}", "currencyLimits")
    return tuple(limits)


def _load_required_fields(f: Fields) -> tuple[RequiredField, ...]:
    fields: list[RequiredField] = []
    for i, raw in enumerate(f.items("requiredFields")):
        item = Fields(
            f.file, f"{f.at('requiredFields')}[{i}]", raw, ["key", "type", "label", "help"]
        )
        key = item.choice("key", sorted(REQUIRED_FIELD_KEYS))
        if any(field.key == key for field in fields):
            item.fail(f"{key} listed twice", "key")
        fields.append(
            RequiredField(
                key=key,
                type=item.choice("type", sorted(REQUIRED_FIELD_TYPES)),
                label=item.text("label"),
                help=item.text("help"),
            )
        )
    return tuple(fields)
