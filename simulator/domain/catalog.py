"""The fixed world the simulator serves: merchants, shops, keys, payment methods, providers, FX,
payout methods and deposit methods.

Plain frozen dataclasses, built once from the fixture files by `simulator.fixture_loader` and
looked up through `Catalog`'s dict indexes (never scanned on the hot path).
"""

from __future__ import annotations

import copy as copy_module
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from payorch.vocabulary import (
    PROVIDER_BEHAVIOURS_BY_KIND,
    PROVIDER_CALLBACK_MODES,
    PROVIDER_CALLBACK_OUTCOMES_BY_KIND,
)

Environment = Literal["sandbox", "production"]
Tier = Literal["starter", "standard", "premium"]
Channel = Literal["ONLINE", "CASH", "CREDIT_CARD"]
Flow = Literal["direct", "hosted"]
ProviderKind = Literal["payin", "payout"]
# What a provider does with a production call (providers/world.py explains each): the table is
# payorch.vocabulary's; a provider is scripted only with its own kind's behaviours.
ProviderBehaviour = str  # one of PROVIDER_BEHAVIOURS
PAYIN_BEHAVIOURS: tuple[ProviderBehaviour, ...] = PROVIDER_BEHAVIOURS_BY_KIND["payin"]
PAYOUT_BEHAVIOURS: tuple[ProviderBehaviour, ...] = PROVIDER_BEHAVIOURS_BY_KIND["payout"]
CALLBACK_MODES = PROVIDER_CALLBACK_MODES
PAYIN_CALLBACK_OUTCOMES = PROVIDER_CALLBACK_OUTCOMES_BY_KIND["payin"]
PAYOUT_CALLBACK_OUTCOMES = PROVIDER_CALLBACK_OUTCOMES_BY_KIND["payout"]

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

# Pay-in decline reasons: the issuer/risk declines the spec names (a card charge gets their 402),
# and `do_not_honor`, the acquirer's own refusal (the cascade moves on).
PAYIN_DECLINE_REASONS = (*sorted(CATALOGUE_CARD_DECLINES), "do_not_honor")
PAYOUT_REJECT_REASONS = (
    "rejected_by_provider",
    "rejected_by_beneficiary_bank",
    "invalid_account",
    "account_closed",
    "compliance_rejected",
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
    callback_after_seconds: float | None = None
    # paid | failed for a pay-in provider; completed | failed | rejected | refunded | returned
    # for a payout provider.
    callback_outcome: str = "paid"
    kind: ProviderKind = "payin"
    # `duplicate`: every callback is delivered twice (the second must change nothing).
    callback_mode: str = "once"
    # Share of the charges it would accept that it declines instead, drawn from `seed`.
    decline_rate: float = 0.0
    seed: int = 0
    # Seconds the provider takes to answer a call; past the platform's timeout the call times out.
    latency_seconds: float | None = None


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


# Payout rails, and the recipient field types POST /me/payout/send knows how to check
# (simulator.domain.payouts.rules has one check per type; payout_methods.yaml documents each).
PAYOUT_RAILS = ("spei", "pix", "bank", "phone_wallet", "email_wallet")
RECIPIENT_FIELD_TYPES = (
    "text",
    "email",
    "select",
    "clabe",
    "cbu",
    "cci",
    "bank_account",
    "phone",
    "document",
    "pix_key",
)


@dataclass(frozen=True, slots=True)
class FieldOption:
    """One choice of a selector recipient field (a bank code, an account or document type)."""

    value: str
    label: str


@dataclass(frozen=True, slots=True)
class RecipientField:
    """One field of a payout method's recipient form; `type` decides how the value is checked."""

    key: str
    label: str
    required: bool
    type: str
    options: tuple[FieldOption, ...] | None = None


@dataclass(frozen=True, slots=True)
class PayoutRejection:
    """A recipient value the simulated payout provider rejects, and the reason it reports."""

    field: str
    value: str
    failure_reason: str


@dataclass(frozen=True, slots=True)
class PayoutMethod:
    id: str  # po_* for real rails, sbx_po_* for the sandbox's synthetic ones
    name: str
    rail: str  # spei, pix, bank, phone_wallet, email_wallet
    country: str  # ISO-2
    country_iso3: str
    currency: str
    min_usd: Decimal
    max_usd: Decimal
    icon: str  # file name under static/icons
    recipient_fields: tuple[RecipientField, ...]
    rejections: tuple[PayoutRejection, ...] = ()
    # Synthetic: sandbox only, no provider, no balance debit (spec: sbx_po_* rails).
    sandbox_only: bool = False


@dataclass(frozen=True, slots=True)
class DepositMethod:
    """A fixed-account (CLABE) deposit method a shop may enable."""

    id: str  # dm_*
    method: str  # slug of the rail, e.g. spei
    name: str
    country: str  # ISO-2
    currency: str
    # The 3-digit CLABE bank prefix accounts are minted under.
    clabe_bank_code: str
    # The institution as the network states it; None = not stated (never inferred from the CLABE).
    bank_name: str | None
    # The pay-in method a transfer into the account is priced and reported as.
    payment_method_id: str


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
    # From payout_methods.yaml, in file order (listings keep that order).
    payout_methods: dict[str, PayoutMethod] = field(default_factory=dict)
    deposit_methods: dict[str, DepositMethod] = field(default_factory=dict)

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

    def rekeyed(self, derive: Callable[[str], str]) -> Catalog:
        """This catalog with every key replaced by `derive(key)` (a namespace's keys): the
        merchants, methods, providers and FX are the same objects, shared, not copied."""
        copy = copy_module.copy(self)
        copy.credentials, copy.by_secret, copy.by_publishable = [], {}, {}
        for c in self.credentials:
            publishable = derive(c.publishable) if c.publishable else None
            copy._add(Credential(c.merchant, c.shop, c.environment, publishable, derive(c.secret)))
        return copy

    def _add(self, credential: Credential) -> None:
        self.credentials.append(credential)
        self.by_secret[credential.secret] = credential
        if credential.publishable:
            self.by_publishable[credential.publishable] = credential
