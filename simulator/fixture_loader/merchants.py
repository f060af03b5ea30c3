"""merchants.yaml: the merchants, their shops and every key pair (the credentials `payorch keys`
lists), with each key's shape and uniqueness checked across the whole file."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from simulator.domain.catalog import (
    DepositMethod,
    Environment,
    KeyPair,
    Merchant,
    PaymentMethod,
    Shop,
)
from simulator.fixture_loader.fields import Fields, FixtureError, entries, unique_id
from simulator.fixture_loader.files import METHODS_FILE, PAYOUT_METHODS_FILE
from simulator.fixture_loader.payment_methods import METHOD_ID
from simulator.fixture_loader.payout_methods import DEPOSIT_METHOD_ID

# Optional fields of POST /me/deposit-accounts a shop setup may make mandatory.
DEPOSIT_FIELD_KEYS = frozenset({"phone", "documentType", "documentId", "country"})
_KEY_PREFIXES: dict[Environment, tuple[str, str]] = {
    "sandbox": ("pk_test_", "sk_test_"),
    "production": ("pk_live_", "sk_live_"),
}
_KEY_BODY = re.compile(r"[a-z0-9]{24}")
_MERCHANT_ID = re.compile(r"mer_[a-z0-9_]+")
_SHOP_ID = re.compile(r"shp_[a-z0-9_]+")
_CRYPTO_ASSET = re.compile(r"[A-Z0-9]{2,10}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")

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


def load(file: str, data: Any, methods: dict[str, PaymentMethod]) -> dict[str, Merchant]:
    merchants: dict[str, Merchant] = {}
    shop_ids: set[str] = set()
    # Every key string across the file, so one key can never resolve to two credentials.
    key_owner: dict[str, str] = {}
    for where, raw in entries(file, data, "merchants"):
        f = Fields(file, where, raw, _MERCHANT_REQUIRED, optional=["suspended", "legacyKeys"])
        ident = f.text("id", _MERCHANT_ID)
        unique_id(f, ident, merchants)
        email = f.text("email", _EMAIL)
        capabilities = Fields(file, f.at("capabilities"), f.raw("capabilities"), _CAPABILITIES)
        shops = tuple(
            _load_shop(f, i, raw_shop, ident, methods, shop_ids, key_owner)
            for i, raw_shop in enumerate(f.items("shops"))
        )
        legacy: list[KeyPair] = []
        for i, raw_key in enumerate(f.items("legacyKeys", default=[])):
            key = Fields(file, f"{f.at('legacyKeys')}[{i}]", raw_key, ["environment", "secret"])
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
    merchant: Fields,
    index: int,
    raw: Any,
    merchant_id: str,
    methods: dict[str, PaymentMethod],
    shop_ids: set[str],
    key_owner: dict[str, str],
) -> Shop:
    ident = raw.get("id") if isinstance(raw, dict) else None
    label = ident if isinstance(ident, str) else index
    f = Fields(
        merchant.file, f"{merchant.at('shops')}[{label}]", raw, _SHOP_REQUIRED, _SHOP_OPTIONAL
    )
    ident = f.text("id", _SHOP_ID)
    if ident in shop_ids:
        f.fail(f"duplicate shop id {ident!r}", "id")
    shop_ids.add(ident)
    promoted = f.choice("promotedTo", (None, "sandbox", "production"))
    enabled = _load_enabled_methods(f, methods)
    deposit_fields = f.strings("requiredDepositFields", default=[])
    for name in deposit_fields:
        if name not in DEPOSIT_FIELD_KEYS:
            f.fail(
                f"{name!r} is not one of {', '.join(sorted(DEPOSIT_FIELD_KEYS))}",
                "requiredDepositFields",
            )
    pairs = _load_key_pairs(f, key_owner)
    return Shop(
        id=ident,
        merchant_id=merchant_id,
        name=f.text("name"),
        suspended=f.boolean("suspended", False),
        promoted_to=promoted,
        enabled_method_ids=enabled,
        deposit_method_ids=tuple(f.strings("depositMethods", DEPOSIT_METHOD_ID, default=[])),
        required_deposit_fields=tuple(deposit_fields),
        keys=tuple(pairs),
    )


def _load_enabled_methods(f: Fields, methods: dict[str, PaymentMethod]) -> tuple[str, ...]:
    """`all` (every method of the catalogue) or a list of known paymentMethodIds."""
    if f.raw("enabledMethods") == "all":
        return tuple(methods)
    if not isinstance(f.raw("enabledMethods"), list):
        f.fail("expected `all` or a list of paymentMethodIds", "enabledMethods")
    enabled = tuple(f.strings("enabledMethods", METHOD_ID, id_like=True))
    for method_id in enabled:
        if method_id not in methods:
            f.fail(
                f"unknown payment method {method_id!r} (not in {METHODS_FILE})",
                "enabledMethods",
            )
    return enabled


def _load_key_pairs(f: Fields, key_owner: dict[str, str]) -> list[KeyPair]:
    """The shop's key pair per environment (at least one), each key unique in the fixtures."""
    keys_map = Fields(f.file, f.at("keys"), f.raw("keys"), required=(), optional=_KEY_PREFIXES)
    if not keys_map.data:
        keys_map.fail("needs a sandbox or production key pair")
    pairs = []
    for environment, (pk_prefix, sk_prefix) in _KEY_PREFIXES.items():
        if environment not in keys_map.data:
            continue
        pair = Fields(
            f.file, keys_map.at(environment), keys_map.raw(environment), ["publishable", "secret"]
        )
        pairs.append(
            KeyPair(
                environment=environment,
                publishable=_key(pair, "publishable", pk_prefix, key_owner),
                secret=_key(pair, "secret", sk_prefix, key_owner),
            )
        )
    return pairs


def _key(f: Fields, field: str, prefix: str, key_owner: dict[str, str]) -> str:
    value = f.text(field)
    if not value.startswith(prefix):
        f.fail(f"{value!r} must start with {prefix!r}", field)
    if not _KEY_BODY.fullmatch(value[len(prefix) :]):
        f.fail(f"after {prefix!r} expected 24 lowercase letters or digits", field)
    owner = key_owner.setdefault(value, f.at(field))
    if owner != f.at(field):
        f.fail(f"key already used at {owner}", field)
    return value


def check_deposit_methods(
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
