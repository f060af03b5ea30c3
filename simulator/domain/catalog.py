"""The fixed world the simulator serves: merchants, shops, keys, payment methods, providers, FX.

Plain frozen dataclasses, built once from the fixture files by `simulator.fixture_loader` and
looked up through `Catalog`'s dict indexes (never scanned on the hot path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

Environment = Literal["sandbox", "production"]
Tier = Literal["starter", "standard", "premium"]
Channel = Literal["ONLINE", "CASH", "CREDIT_CARD"]
Flow = Literal["direct", "hosted"]
ProviderBehaviour = Literal["accept", "decline", "no_instructions", "outage"]

ENVIRONMENTS: tuple[Environment, ...] = ("sandbox", "production")
# Provider decline reasons that are issuer/risk declines, reported as 402 with their own code.
CATALOGUE_CARD_DECLINES = frozenset(
    {
        "card_declined",
        "insufficient_funds",
        "expired_card",
        "fraud_blocked",
        "kyc_required",
        "three_ds_required",
        "three_ds_failed",
    }
)


@dataclass(frozen=True, slots=True)
class KeyPair:
    environment: Environment
    publishable: str | None
    secret: str


@dataclass(frozen=True, slots=True)
class Shop:
    id: str
    merchant_id: str
    name: str
    suspended: bool
    # The environment the shop lives in once promoted; None = usable in both environments.
    # Credentials of the other environment get 403 environment_mismatch.
    promoted_to: Environment | None
    enabled_method_ids: tuple[str, ...]
    deposit_method_ids: tuple[str, ...]
    required_deposit_fields: tuple[str, ...]
    keys: tuple[KeyPair, ...]


@dataclass(frozen=True, slots=True)
class Merchant:
    id: str
    name: str
    email: str
    industry: str
    tier: Tier
    trust_score: int
    suspended: bool
    rolling_reserve_pct: Decimal
    reserve_days: int
    withdrawal_fee_usd: Decimal
    platform_fee_pct: Decimal
    chargeback_fee_usd: Decimal
    settlement_delay_days: int
    crypto: tuple[str, ...]
    checkout: bool
    direct_charge: bool
    refunds: bool
    webhooks: bool
    shops: tuple[Shop, ...]
    # Merchant-wide (legacy) secret keys: no shop, no publishable key.
    legacy_keys: tuple[KeyPair, ...] = ()


@dataclass(frozen=True, slots=True)
class CurrencyLimit:
    currency: str
    min: Decimal
    max: Decimal


@dataclass(frozen=True, slots=True)
class RequiredField:
    """A buyer field a rail needs: `key` is the request field name (userName, userEmail ...)."""

    key: str
    type: str
    label: str
    help: str


@dataclass(frozen=True, slots=True)
class PaymentMethod:
    id: str  # 4-digit from 1001, or sbx_*
    method: str  # slug
    name: str
    method_label: str
    country_iso2: str
    country_iso3: str
    channel: Channel
    flow: Flow
    currencies: tuple[str, ...]
    currency_limits: tuple[CurrencyLimit, ...]
    min_tx_usd: Decimal | None
    max_tx_usd: Decimal | None
    fee_percent: Decimal
    fee_flat: Decimal
    enabled: bool
    online: bool
    routable: bool
    unroutable_reason: str | None
    icon: str | None  # file name under static/icons, None = generic category icon
    required_fields: tuple[RequiredField, ...]
    due_hours: int
    provider_ids: tuple[str, ...]  # cascade order
    sandbox_only: bool = False

    @property
    def local_currency(self) -> str:
        return self.currencies[0]

    def limit_for(self, currency: str) -> CurrencyLimit | None:
        for limit in self.currency_limits:
            if limit.currency == currency:
                return limit
        return None


@dataclass(frozen=True, slots=True)
class Provider:
    id: str
    name: str
    rails: tuple[str, ...]
    # Behaviour in production; sandbox always accepts (spec rule 6).
    behaviour: ProviderBehaviour
    decline_reason: str | None
    bank_name: str | None
    beneficiary_name: str | None
    # Seconds after creation at which the provider's own callback confirms a production pay-in;
    # None = it never calls back and only the reconciliation poll settles it.
    callback_after_seconds: int | None = None
    callback_outcome: Literal["paid", "failed"] = "paid"


@dataclass(frozen=True, slots=True)
class FxTable:
    markup_pct: Decimal
    # Local units per 1 USD.
    usd_rates: dict[str, Decimal]
    # Minor-unit digits per currency (USD 2, CLP 0 ...).
    decimals: dict[str, int]


@dataclass(frozen=True, slots=True)
class Credential:
    """One key pair (or merchant-wide secret) as `payorch keys` lists it."""

    merchant: Merchant
    shop: Shop | None
    environment: Environment
    publishable: str | None
    secret: str


@dataclass(slots=True)
class Catalog:
    merchants: dict[str, Merchant]
    methods: dict[str, PaymentMethod]
    providers: dict[str, Provider]
    fx: FxTable
    credentials: list[Credential] = field(default_factory=list)
    by_secret: dict[str, Credential] = field(default_factory=dict)
    by_publishable: dict[str, Credential] = field(default_factory=dict)
    shops: dict[str, Shop] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for merchant in self.merchants.values():
            for shop in merchant.shops:
                self.shops[shop.id] = shop
                for pair in shop.keys:
                    self._add(
                        Credential(merchant, shop, pair.environment, pair.publishable, pair.secret)
                    )
            for pair in merchant.legacy_keys:
                self._add(Credential(merchant, None, pair.environment, None, pair.secret))

    def _add(self, credential: Credential) -> None:
        self.credentials.append(credential)
        self.by_secret[credential.secret] = credential
        if credential.publishable:
            self.by_publishable[credential.publishable] = credential
