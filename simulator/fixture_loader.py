"""Reads the fixture files (merchants, payment methods, providers, FX) into a `Catalog`.

The built-in set lives in `simulator/fixtures/` as package data; `payorch serve --fixtures DIR`
points at a copy holding the same four files, plus `payout_methods.yaml` (payout and deposit
methods, also required in a copy). Users edit those copies by hand, so every problem is
reported as `FixtureError("<file>: <where>: <problem>")` naming the exact entry and key, and
nothing is silently defaulted that changes behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from decimal import Decimal, InvalidOperation
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, NoReturn

import yaml

from payorch.vocabulary import PAYMENT_METHOD_SLUGS
from simulator.domain.catalog import (
    PAYOUT_RAILS,
    RECIPIENT_FIELD_TYPES,
    Catalog,
    CurrencyLimit,
    DepositMethod,
    Environment,
    FieldOption,
    FxTable,
    KeyPair,
    Merchant,
    PaymentMethod,
    PayoutMethod,
    PayoutRejection,
    Provider,
    RecipientField,
    RequiredField,
    Shop,
)
from simulator.domain.countries import ISO2_TO_ISO3

FX_FILE = "fx.yaml"
PROVIDERS_FILE = "providers.yaml"
METHODS_FILE = "payment_methods.yaml"
MERCHANTS_FILE = "merchants.yaml"
FIXTURE_FILES = (MERCHANTS_FILE, METHODS_FILE, PROVIDERS_FILE, FX_FILE)
# Read after the four above, so their problems are reported first.
PAYOUT_METHODS_FILE = "payout_methods.yaml"

# The spec's paymentData slugs: the only rails a method or provider may name.
METHOD_SLUGS = frozenset(PAYMENT_METHOD_SLUGS)
# Buyer fields of POST /payments a rail may demand.
REQUIRED_FIELD_KEYS = frozenset({"userName", "userEmail", "documentId", "userPhone"})
REQUIRED_FIELD_TYPES = frozenset({"string", "email", "document", "phone"})
# Optional fields of POST /me/deposit-accounts a shop setup may make mandatory.
DEPOSIT_FIELD_KEYS = frozenset({"phone", "documentType", "documentId", "country"})

_KEY_PREFIXES: dict[Environment, tuple[str, str]] = {
    "sandbox": ("pk_test_", "sk_test_"),
    "production": ("pk_live_", "sk_live_"),
}
_KEY_BODY = re.compile(r"[a-z0-9]{24}")
_MERCHANT_ID = re.compile(r"mer_[a-z0-9_]+")
_SHOP_ID = re.compile(r"shp_[a-z0-9_]+")
_PROVIDER_ID = re.compile(r"prv_[a-z0-9_]+")
_DEPOSIT_METHOD_ID = re.compile(r"dm_[a-z0-9_]+")
_METHOD_ID = re.compile(r"\d{4}|sbx_[a-z0-9_]+")
_PAYOUT_METHOD_ID = re.compile(r"(sbx_)?po_[a-z0-9_]+")
_FIELD_KEY = re.compile(r"[a-z][A-Za-z0-9]*")
_CURRENCY = re.compile(r"[A-Z]{3}")
_CRYPTO_ASSET = re.compile(r"[A-Z0-9]{2,10}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_ICON_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*\.svg")
_FIRST_METHOD_ID = 1001


class FixtureError(ValueError):
    """A fixture file is unreadable or inconsistent; the message names file, place and problem."""

    def __init__(self, file: str, where: str, problem: str) -> None:
        super().__init__(f"{file}: {where}: {problem}")
        self.file = file
        self.where = where
        self.problem = problem


# ---------------------------------------------------------------------------- package resources


def builtin_fixtures_dir() -> Traversable:
    """The built-in fixture directory, found through the installed package (no source tree)."""
    return resources.files("simulator") / "fixtures"


def _static_resource() -> Traversable:
    # Existence checks go through importlib.resources so they hold for any installed layout.
    return resources.files("simulator") / "static"


def static_dir() -> Path:
    """The package's static directory on disk, for the HTTP layer to serve files from."""
    static = _static_resource()
    # pip installs unpacked, where this is a real Path; a zipped import has no file to serve.
    if not isinstance(static, Path):
        raise RuntimeError("simulator must be installed unpacked to serve static files")
    return static


# ---------------------------------------------------------------------------- YAML reading


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loader that refuses duplicate mapping keys (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(directory: Traversable, name: str, label: str) -> Any:
    source = directory / name
    if not source.is_file():
        raise FixtureError(label, "file", f"missing (expected {name} in {directory})")
    try:
        return yaml.load(source.read_text(encoding="utf-8"), Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "file"
        problem = getattr(exc, "problem", None) or str(exc)
        raise FixtureError(label, where, f"invalid YAML: {problem}") from exc
    except UnicodeDecodeError as exc:
        raise FixtureError(label, "file", "not UTF-8 text") from exc


class _Fields:
    """One YAML mapping under validation: keys are checked against the schema on entry, then each
    getter converts one value or raises a FixtureError naming file, place and key."""

    def __init__(
        self,
        file: str,
        where: str,
        data: Any,
        required: Iterable[str],
        optional: Iterable[str] = (),
        *,
        any_keys: bool = False,
    ) -> None:
        self.file = file
        self.where = where
        if not isinstance(data, dict):
            self.fail(f"expected a mapping, got {_kind(data)}")
        required, optional = tuple(required), tuple(optional)
        allowed = set(required) | set(optional)
        # any_keys: a map keyed by data (currency codes), checked by the caller instead.
        unknown = [] if any_keys else [key for key in data if key not in allowed]
        if unknown:
            self.fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
        missing = [key for key in required if key not in data]
        if missing:
            self.fail(f"missing key {missing[0]!r}")
        self.data: dict[str, Any] = data

    def fail(self, problem: str, key: str | None = None) -> NoReturn:
        raise FixtureError(self.file, self.at(key) if key else self.where, problem)

    def at(self, key: str) -> str:
        return f"{self.where}.{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def text(
        self, key: str, pattern: re.Pattern[str] | None = None, *, id_like: bool = False
    ) -> str:
        value = self.data.get(key)
        # Unquoted 4-digit method ids arrive as ints; accept them so hand edits need no quotes.
        if id_like and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"expected a non-empty string, got {_kind(value)}", key)
        if pattern is not None and not pattern.fullmatch(value):
            self.fail(f"{value!r} does not match {pattern.pattern}", key)
        return value

    def opt_text(self, key: str, pattern: re.Pattern[str] | None = None) -> str | None:
        return self.text(key, pattern) if self.has(key) else None

    def choice(self, key: str, options: Iterable[str]) -> Any:
        value = self.data.get(key)
        options = tuple(options)
        if value not in options:
            self.fail(f"{value!r} is not one of {', '.join(map(str, options))}", key)
        return value

    def boolean(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.fail(f"expected true or false, got {_kind(value)}", key)
        return value

    def integer(self, key: str, low: int | None = None, high: int | None = None) -> int:
        value = self.data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(f"expected an integer, got {_kind(value)}", key)
        _check_range(value, low, high, lambda problem: self.fail(problem, key))
        return value

    def opt_integer(self, key: str, low: int | None = None) -> int | None:
        return self.integer(key, low) if self.has(key) else None

    def decimal(self, key: str, low: Decimal | None = None, high: Decimal | None = None) -> Decimal:
        return _decimal(self.data.get(key), low, high, lambda problem: self.fail(problem, key))

    def opt_decimal(self, key: str, low: Decimal | None = None) -> Decimal | None:
        return self.decimal(key, low) if self.has(key) else None

    def items(self, key: str, *, default: list[Any] | None = None) -> list[Any]:
        value = self.data.get(key, default)
        if not isinstance(value, list):
            self.fail(f"expected a list, got {_kind(value)}", key)
        return value

    def strings(
        self,
        key: str,
        pattern: re.Pattern[str] | None = None,
        *,
        default: list[Any] | None = None,
        id_like: bool = False,
    ) -> list[str]:
        values = list(self.items(key, default=default))
        for i, value in enumerate(values):
            if id_like and isinstance(value, int) and not isinstance(value, bool):
                value = values[i] = str(value)
            if not isinstance(value, str) or (pattern and not pattern.fullmatch(value)):
                expected = f"a string matching {pattern.pattern}" if pattern else "a string"
                self.fail(f"expected {expected}, got {value!r}", f"{key}[{i}]")
        duplicates = _duplicates(values)
        if duplicates:
            self.fail(f"{duplicates[0]!r} listed twice", key)
        return values


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _check_range(value: Any, low: Any, high: Any, fail: Callable[[str], NoReturn]) -> None:
    if low is not None and value < low:
        fail(f"{value} is below the minimum {low}")
    if high is not None and value > high:
        fail(f"{value} is above the maximum {high}")


def _decimal(
    value: Any, low: Decimal | None, high: Decimal | None, fail: Callable[[str], NoReturn]
) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        fail(f"expected a number, got {_kind(value)}")
    try:
        # Via str so a YAML float such as 2.5 becomes Decimal("2.5"), not its binary expansion.
        number = Decimal(str(value).strip())
    except InvalidOperation:
        fail(f"expected a number, got {value!r}")
    if not number.is_finite():
        fail(f"expected a finite number, got {value!r}")
    _check_range(number, low, high, fail)
    return number


def _duplicates(values: Iterable[Any]) -> list[Any]:
    seen: set[Any] = set()
    repeated = []
    for value in values:
        if value in seen:
            repeated.append(value)
        seen.add(value)
    return repeated


def _entries(file: str, data: Any, key: str) -> list[tuple[str, Any]]:
    """The list under a file's single top-level key, each item with a readable place name."""
    top = _Fields(file, "(top level)", data, required=[key])
    items = top.items(key)
    places = []
    for i, item in enumerate(items):
        ident = item.get("id") if isinstance(item, dict) else None
        label = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else i
        places.append((f"{key}[{label}]", item))
    return places


def _unique_id(fields: _Fields, ident: str, seen: Container[str]) -> None:
    if ident in seen:
        fields.fail(f"duplicate id {ident!r} (an earlier entry has it)", "id")


# ---------------------------------------------------------------------------- the four files


def _load_fx(file: str, data: Any) -> FxTable:
    top = _Fields(file, "(top level)", data, required=["markupPct", "usdRates", "decimals"])
    markup = top.decimal("markupPct", Decimal(0), Decimal(100))
    rates_map = _Fields(file, "usdRates", top.raw("usdRates"), (), any_keys=True)
    decimals_map = _Fields(file, "decimals", top.raw("decimals"), (), any_keys=True)
    rates: dict[str, Decimal] = {}
    for currency in rates_map.data:
        if not isinstance(currency, str) or not _CURRENCY.fullmatch(currency):
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


def _load_providers(file: str, data: Any) -> dict[str, Provider]:
    providers: dict[str, Provider] = {}
    for where, raw in _entries(file, data, "providers"):
        f = _Fields(
            file,
            where,
            raw,
            required=["id", "name", "rails", "behaviour", "callbackAfterSeconds"],
            optional=["declineReason", "bankName", "beneficiaryName", "callbackOutcome"],
        )
        ident = f.text("id", _PROVIDER_ID)
        _unique_id(f, ident, providers)
        rails = f.strings("rails")
        for rail in rails:
            if rail not in METHOD_SLUGS:
                f.fail(f"unknown rail {rail!r} (known: {', '.join(sorted(METHOD_SLUGS))})", "rails")
        behaviour = f.choice("behaviour", ("accept", "decline", "no_instructions", "outage"))
        if behaviour == "decline" and not f.has("declineReason"):
            f.fail("a declining provider needs a declineReason", "declineReason")
        outcome = (
            f.choice("callbackOutcome", ("paid", "failed")) if f.has("callbackOutcome") else "paid"
        )
        providers[ident] = Provider(
            id=ident,
            name=f.text("name"),
            rails=tuple(rails),
            behaviour=behaviour,
            decline_reason=f.opt_text("declineReason"),
            bank_name=f.opt_text("bankName"),
            beneficiary_name=f.opt_text("beneficiaryName"),
            callback_after_seconds=f.opt_integer("callbackAfterSeconds", 1),
            callback_outcome=outcome,
        )
    return providers


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


def _load_methods(
    file: str, data: Any, providers: dict[str, Provider], fx: FxTable
) -> dict[str, PaymentMethod]:
    methods: dict[str, PaymentMethod] = {}
    iso3_of: dict[str, str] = {}
    iso2_of: dict[str, str] = {}
    for where, raw in _entries(file, data, "paymentMethods"):
        f = _Fields(file, where, raw, required=_METHOD_REQUIRED, optional=_METHOD_OPTIONAL)
        ident = f.text("id", _METHOD_ID, id_like=True)
        _unique_id(f, ident, methods)
        sandbox_only = f.boolean("sandboxOnly", False)
        if ident.startswith("sbx_") != sandbox_only:
            f.fail("sbx_* ids and only they must say sandboxOnly: true", "sandboxOnly")
        if not sandbox_only and int(ident) < _FIRST_METHOD_ID:
            f.fail(f"4-digit ids start at {_FIRST_METHOD_ID}", "id")
        slug = f.choice("method", sorted(METHOD_SLUGS))
        iso2 = f.text("country", re.compile(r"[A-Z]{2}"))
        iso3 = f.text("countryIso3", re.compile(r"[A-Z]{3}"))
        # One ISO-2 code per ISO-3 code and back, so country filters normalize unambiguously.
        if iso3_of.setdefault(iso2, iso3) != iso3 or iso2_of.setdefault(iso3, iso2) != iso2:
            f.fail(f"{iso2}/{iso3} contradicts an earlier method's country pair", "countryIso3")
        currencies = f.strings("currencies", _CURRENCY)
        if not currencies:
            f.fail("needs at least one currency (the local one first)", "currencies")
        for currency in currencies:
            if currency not in fx.usd_rates:
                f.fail(f"{currency} has no rate in {FX_FILE}", "currencies")
        limits = _load_limits(f, currencies)
        min_usd = f.opt_decimal("minTxUsd", Decimal(0))
        max_usd = f.opt_decimal("maxTxUsd", Decimal(0))
        if min_usd is not None and max_usd is not None and min_usd > max_usd:
            f.fail(f"minTxUsd {min_usd} is above maxTxUsd {max_usd}", "maxTxUsd")
        fee = _Fields(file, f.at("fee"), f.raw("fee"), required=["percent", "flat", "currency"])
        fee.choice("currency", ("USD",))  # fees are charged in the settlement currency
        routable = f.boolean("routable")
        reason = f.opt_text("unroutableReason")
        if routable == (reason is not None):
            f.fail("give a reason exactly when routable is false", "unroutableReason")
        icon = f.opt_text("icon", _ICON_NAME)
        if icon is not None and not (_static_resource() / "icons" / icon).is_file():
            f.fail(f"no icon file {icon!r} in simulator/static/icons", "icon")
        provider_ids = f.strings("providers", _PROVIDER_ID)
        for provider_id in provider_ids:
            provider = providers.get(provider_id)
            if provider is None:
                f.fail(f"unknown provider {provider_id!r} (not in {PROVIDERS_FILE})", "providers")
            if slug not in provider.rails:
                f.fail(f"provider {provider_id!r} does not serve rail {slug!r}", "providers")
        methods[ident] = PaymentMethod(
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
    return methods


def _load_limits(f: _Fields, currencies: list[str]) -> tuple[CurrencyLimit, ...]:
    limits: list[CurrencyLimit] = []
    for i, raw in enumerate(f.items("currencyLimits")):
        item = _Fields(f.file, f"{f.at('currencyLimits')}[{i}]", raw, ["currency", "min", "max"])
        currency = item.text("currency", _CURRENCY)
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


def _load_required_fields(f: _Fields) -> tuple[RequiredField, ...]:
    fields: list[RequiredField] = []
    for i, raw in enumerate(f.items("requiredFields")):
        item = _Fields(
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


_MERCHANT_REQUIRED = [
    "id",
    "name",
    "email",
    "industry",
    "tier",
    "trustScore",
    "rollingReservePct",
    "reserveDays",
    "withdrawalFeeUsd",
    "platformFeePct",
    "chargebackFeeUsd",
    "settlementDelayDays",
    "crypto",
    "capabilities",
    "shops",
]
_SHOP_REQUIRED = ("id", "name", "enabledMethods", "keys")
_SHOP_OPTIONAL = ("suspended", "promotedTo", "depositMethods", "requiredDepositFields")
_CAPABILITIES = ("checkout", "directCharge", "refunds", "webhooks")


def _load_merchants(file: str, data: Any, methods: dict[str, PaymentMethod]) -> dict[str, Merchant]:
    merchants: dict[str, Merchant] = {}
    shop_ids: set[str] = set()
    # Every key string across the file, so one key can never resolve to two credentials.
    key_owner: dict[str, str] = {}
    for where, raw in _entries(file, data, "merchants"):
        f = _Fields(file, where, raw, _MERCHANT_REQUIRED, optional=["suspended", "legacyKeys"])
        ident = f.text("id", _MERCHANT_ID)
        _unique_id(f, ident, merchants)
        email = f.text("email", _EMAIL)
        capabilities = _Fields(file, f.at("capabilities"), f.raw("capabilities"), _CAPABILITIES)
        shops = tuple(
            _load_shop(f, i, raw_shop, ident, methods, shop_ids, key_owner)
            for i, raw_shop in enumerate(f.items("shops"))
        )
        legacy: list[KeyPair] = []
        for i, raw_key in enumerate(f.items("legacyKeys", default=[])):
            key = _Fields(file, f"{f.at('legacyKeys')}[{i}]", raw_key, ["environment", "secret"])
            environment = key.choice("environment", _KEY_PREFIXES)
            secret = _key(key, "secret", _KEY_PREFIXES[environment][1], key_owner)
            legacy.append(KeyPair(environment=environment, publishable=None, secret=secret))
        merchants[ident] = Merchant(
            id=ident,
            name=f.text("name"),
            email=email,
            industry=f.text("industry"),
            tier=f.choice("tier", ("starter", "standard", "premium")),
            trust_score=f.integer("trustScore", 0, 1000),
            suspended=f.boolean("suspended", False),
            rolling_reserve_pct=f.decimal("rollingReservePct", Decimal(0), Decimal(100)),
            reserve_days=f.integer("reserveDays", 0),
            withdrawal_fee_usd=f.decimal("withdrawalFeeUsd", Decimal(0)),
            platform_fee_pct=f.decimal("platformFeePct", Decimal(0), Decimal(100)),
            chargeback_fee_usd=f.decimal("chargebackFeeUsd", Decimal(0)),
            settlement_delay_days=f.integer("settlementDelayDays", 0),
            crypto=tuple(f.strings("crypto", _CRYPTO_ASSET)),
            checkout=capabilities.boolean("checkout"),
            direct_charge=capabilities.boolean("directCharge"),
            refunds=capabilities.boolean("refunds"),
            webhooks=capabilities.boolean("webhooks"),
            shops=shops,
            legacy_keys=tuple(legacy),
        )
    return merchants


def _load_shop(
    merchant: _Fields,
    index: int,
    raw: Any,
    merchant_id: str,
    methods: dict[str, PaymentMethod],
    shop_ids: set[str],
    key_owner: dict[str, str],
) -> Shop:
    ident = raw.get("id") if isinstance(raw, dict) else None
    label = ident if isinstance(ident, str) else index
    f = _Fields(
        merchant.file, f"{merchant.at('shops')}[{label}]", raw, _SHOP_REQUIRED, _SHOP_OPTIONAL
    )
    ident = f.text("id", _SHOP_ID)
    if ident in shop_ids:
        f.fail(f"duplicate shop id {ident!r}", "id")
    shop_ids.add(ident)
    promoted = f.choice("promotedTo", (None, "sandbox", "production"))
    if f.raw("enabledMethods") == "all":
        enabled = tuple(methods)
    else:
        if not isinstance(f.raw("enabledMethods"), list):
            f.fail("expected `all` or a list of paymentMethodIds", "enabledMethods")
        enabled = tuple(f.strings("enabledMethods", _METHOD_ID, id_like=True))
        for method_id in enabled:
            if method_id not in methods:
                f.fail(
                    f"unknown payment method {method_id!r} (not in {METHODS_FILE})",
                    "enabledMethods",
                )
    deposit_fields = f.strings("requiredDepositFields", default=[])
    for name in deposit_fields:
        if name not in DEPOSIT_FIELD_KEYS:
            f.fail(
                f"{name!r} is not one of {', '.join(sorted(DEPOSIT_FIELD_KEYS))}",
                "requiredDepositFields",
            )
    keys_map = _Fields(f.file, f.at("keys"), f.raw("keys"), required=(), optional=_KEY_PREFIXES)
    if not keys_map.data:
        keys_map.fail("needs a sandbox or production key pair")
    pairs = []
    for environment, (pk_prefix, sk_prefix) in _KEY_PREFIXES.items():
        if environment not in keys_map.data:
            continue
        pair = _Fields(
            f.file, keys_map.at(environment), keys_map.raw(environment), ["publishable", "secret"]
        )
        pairs.append(
            KeyPair(
                environment=environment,
                publishable=_key(pair, "publishable", pk_prefix, key_owner),
                secret=_key(pair, "secret", sk_prefix, key_owner),
            )
        )
    return Shop(
        id=ident,
        merchant_id=merchant_id,
        name=f.text("name"),
        suspended=f.boolean("suspended", False),
        promoted_to=promoted,
        enabled_method_ids=enabled,
        deposit_method_ids=tuple(f.strings("depositMethods", _DEPOSIT_METHOD_ID, default=[])),
        required_deposit_fields=tuple(deposit_fields),
        keys=tuple(pairs),
    )


def _key(f: _Fields, field: str, prefix: str, key_owner: dict[str, str]) -> str:
    value = f.text(field)
    if not value.startswith(prefix):
        f.fail(f"{value!r} must start with {prefix!r}", field)
    if not _KEY_BODY.fullmatch(value[len(prefix) :]):
        f.fail(f"after {prefix!r} expected 24 lowercase letters or digits", field)
    owner = key_owner.setdefault(value, f.at(field))
    if owner != f.at(field):
        f.fail(f"key already used at {owner}", field)
    return value


# ---------------------------------------------------------------------------- payout_methods.yaml

_PAYOUT_REQUIRED = (
    "id",
    "name",
    "rail",
    "country",
    "currency",
    "minUsd",
    "maxUsd",
    "icon",
    "recipientFields",
)
_PAYOUT_OPTIONAL = ("sandboxOnly", "rejections")
_DEPOSIT_REQUIRED = (
    "id",
    "method",
    "name",
    "country",
    "currency",
    "clabeBankCode",
    "bankName",
    "paymentMethodId",
)


def _load_payout_file(
    file: str, data: Any, fx: FxTable, methods: dict[str, PaymentMethod]
) -> tuple[dict[str, PayoutMethod], dict[str, DepositMethod]]:
    # `x-fields` holds YAML anchors shared by several methods; the loader ignores it.
    top = _Fields(
        file, "(top level)", data, ["payoutMethods", "depositMethods"], optional=["x-fields"]
    )
    payout_methods: dict[str, PayoutMethod] = {}
    for where, raw in _entries(file, {"payoutMethods": top.raw("payoutMethods")}, "payoutMethods"):
        method = _load_payout_method(
            _Fields(file, where, raw, _PAYOUT_REQUIRED, _PAYOUT_OPTIONAL), fx
        )
        if method.id in payout_methods:
            raise FixtureError(file, f"{where}.id", f"duplicate id {method.id!r}")
        payout_methods[method.id] = method
    deposit_methods: dict[str, DepositMethod] = {}
    for where, raw in _entries(
        file, {"depositMethods": top.raw("depositMethods")}, "depositMethods"
    ):
        f = _Fields(file, where, raw, _DEPOSIT_REQUIRED)
        ident = f.text("id", _DEPOSIT_METHOD_ID)
        _unique_id(f, ident, deposit_methods)
        currency = f.text("currency", _CURRENCY)
        if currency not in fx.usd_rates:
            f.fail(f"{currency} has no rate in {FX_FILE}", "currency")
        pay_in_id = f.text("paymentMethodId", _METHOD_ID, id_like=True)
        pay_in = methods.get(pay_in_id)
        if pay_in is None or pay_in.sandbox_only:
            f.fail(
                f"unknown payment method {pay_in_id!r} (not in {METHODS_FILE})", "paymentMethodId"
            )
        if pay_in.local_currency != currency:
            f.fail(
                f"payment method {pay_in_id} settles in {pay_in.local_currency}, not {currency}",
                "paymentMethodId",
            )
        deposit_methods[ident] = DepositMethod(
            id=ident,
            method=f.choice("method", sorted(METHOD_SLUGS)),
            name=f.text("name"),
            country=_iso2(f),
            currency=currency,
            clabe_bank_code=f.text("clabeBankCode", re.compile(r"\d{3}"), id_like=True),
            bank_name=f.opt_text("bankName"),
            payment_method_id=pay_in_id,
        )
    return payout_methods, deposit_methods


def _iso2(f: _Fields) -> str:
    country = f.text("country", re.compile(r"[A-Z]{2}"))
    if country not in ISO2_TO_ISO3:
        f.fail(f"{country!r} is not a country the API knows", "country")
    return country


def _load_payout_method(f: _Fields, fx: FxTable) -> PayoutMethod:
    ident = f.text("id", _PAYOUT_METHOD_ID)
    sandbox_only = f.boolean("sandboxOnly", False)
    if ident.startswith("sbx_") != sandbox_only:
        f.fail("sbx_po_* ids and only they must say sandboxOnly: true", "sandboxOnly")
    country = _iso2(f)
    currency = f.text("currency", _CURRENCY)
    if currency not in fx.usd_rates:
        f.fail(f"{currency} has no rate in {FX_FILE}", "currency")
    min_usd = f.decimal("minUsd", Decimal(0))
    max_usd = f.decimal("maxUsd", Decimal(0))
    if min_usd > max_usd:
        f.fail(f"minUsd {min_usd} is above maxUsd {max_usd}", "maxUsd")
    icon = f.text("icon", _ICON_NAME)
    if not (_static_resource() / "icons" / icon).is_file():
        f.fail(f"no icon file {icon!r} in simulator/static/icons", "icon")
    fields = _load_recipient_fields(f)
    rejections: list[PayoutRejection] = []
    for i, raw in enumerate(f.items("rejections", default=[])):
        item = _Fields(
            f.file, f"{f.at('rejections')}[{i}]", raw, ["field", "value", "failureReason"]
        )
        key = item.choice("field", [field.key for field in fields])
        rejections.append(
            PayoutRejection(
                field=key,
                value=item.text("value", id_like=True),
                failure_reason=item.text("failureReason", re.compile(r"[a-z][a-z0-9_]*")),
            )
        )
    # A synthetic rail has no provider, so nothing could ever reject it.
    if sandbox_only and rejections:
        f.fail("a synthetic sbx_po_* method has no provider to reject", "rejections")
    return PayoutMethod(
        id=ident,
        name=f.text("name"),
        rail=f.choice("rail", PAYOUT_RAILS),
        country=country,
        country_iso3=ISO2_TO_ISO3[country],
        currency=currency,
        min_usd=min_usd,
        max_usd=max_usd,
        icon=icon,
        recipient_fields=fields,
        rejections=tuple(rejections),
        sandbox_only=sandbox_only,
    )


def _load_recipient_fields(f: _Fields) -> tuple[RecipientField, ...]:
    fields: list[RecipientField] = []
    for i, raw in enumerate(f.items("recipientFields")):
        item = _Fields(
            f.file,
            f"{f.at('recipientFields')}[{i}]",
            raw,
            ["key", "label", "required", "type"],
            optional=["options"],
        )
        key = item.text("key", _FIELD_KEY)
        if any(field.key == key for field in fields):
            item.fail(f"{key} listed twice", "key")
        kind = item.choice("type", RECIPIENT_FIELD_TYPES)
        options: tuple[FieldOption, ...] | None = None
        if kind == "select":
            options = _load_options(item)
        elif item.has("options"):
            item.fail("only select fields have options", "options")
        fields.append(
            RecipientField(
                key=key,
                label=item.text("label"),
                required=item.boolean("required"),
                type=kind,
                options=options,
            )
        )
    keys = {field.key for field in fields}
    if not {"name", "account"} <= keys:
        f.fail("every payout method asks for `name` and `account`", "recipientFields")
    return tuple(fields)


def _load_options(item: _Fields) -> tuple[FieldOption, ...]:
    options: list[FieldOption] = []
    for j, raw in enumerate(item.items("options", default=[])):
        option = _Fields(item.file, f"{item.at('options')}[{j}]", raw, ["value", "label"])
        value = option.text("value", id_like=True)
        if any(o.value == value for o in options):
            option.fail(f"{value!r} listed twice", "value")
        options.append(FieldOption(value=value, label=option.text("label")))
    if not options:
        item.fail("a select field needs at least one option", "options")
    return tuple(options)


def _check_shop_deposit_methods(
    file: str, merchants: dict[str, Merchant], deposit_methods: dict[str, DepositMethod]
) -> None:
    """Shops name deposit methods that payout_methods.yaml defines (reported in merchants.yaml)."""
    for merchant in merchants.values():
        for shop in merchant.shops:
            for method_id in shop.deposit_method_ids:
                if method_id not in deposit_methods:
                    raise FixtureError(
                        file,
                        f"merchants[{merchant.id}].shops[{shop.id}].depositMethods",
                        f"unknown deposit method {method_id!r} (not in {PAYOUT_METHODS_FILE})",
                    )


# ---------------------------------------------------------------------------- entry point


def load_catalog(path: Path | None = None) -> Catalog:
    """Load and validate the fixture files from `path` (None = the built-in set)."""
    directory: Traversable = builtin_fixtures_dir() if path is None else Path(path)
    if path is not None and not Path(path).is_dir():
        raise FixtureError(str(path), "directory", "not found or not a directory")

    def label(name: str) -> str:
        # Built-ins by bare name; a user's copy by full path, so the message points at the file.
        return name if path is None else str(Path(path) / name)

    raw = {name: _read_yaml(directory, name, label(name)) for name in FIXTURE_FILES}
    # Order matters: each file may only refer to those loaded before it.
    fx = _load_fx(label(FX_FILE), raw[FX_FILE])
    providers = _load_providers(label(PROVIDERS_FILE), raw[PROVIDERS_FILE])
    methods = _load_methods(label(METHODS_FILE), raw[METHODS_FILE], providers, fx)
    merchants = _load_merchants(label(MERCHANTS_FILE), raw[MERCHANTS_FILE], methods)
    payout_raw = _read_yaml(directory, PAYOUT_METHODS_FILE, label(PAYOUT_METHODS_FILE))
    payout_methods, deposit_methods = _load_payout_file(
        label(PAYOUT_METHODS_FILE), payout_raw, fx, methods
    )
    _check_shop_deposit_methods(label(MERCHANTS_FILE), merchants, deposit_methods)
    return Catalog(
        merchants=merchants,
        methods=methods,
        providers=providers,
        fx=fx,
        payout_methods=payout_methods,
        deposit_methods=deposit_methods,
    )
