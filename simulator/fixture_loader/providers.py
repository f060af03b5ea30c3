"""providers.yaml: the simulated providers, the rails each serves and how each behaves."""

from __future__ import annotations

import re
from typing import Any

from payorch.vocabulary import PAYMENT_METHOD_SLUGS
from simulator.domain.catalog import (
    CALLBACK_MODES,
    PAYIN_BEHAVIOURS,
    PAYIN_CALLBACK_OUTCOMES,
    PAYIN_DECLINE_REASONS,
    PAYOUT_BEHAVIOURS,
    PAYOUT_CALLBACK_OUTCOMES,
    PAYOUT_RAILS,
    PAYOUT_REJECT_REASONS,
    Provider,
    ProviderKind,
)
from simulator.fixture_loader.fields import Fields, entries, unique_id

# The spec's paymentData slugs: the only rails a method or provider may name.
METHOD_SLUGS = frozenset(PAYMENT_METHOD_SLUGS)
PROVIDER_ID = re.compile(r"prv_[a-z0-9_]+")


def load(file: str, data: Any) -> dict[str, Provider]:
    providers: dict[str, Provider] = {}
    for where, raw in entries(file, data, "providers"):
        f = Fields(
            file,
            where,
            raw,
            required=["id", "name", "rails", "behaviour", "callbackAfterSeconds"],
            optional=[
                "kind",
                "declineReason",
                "bankName",
                "beneficiaryName",
                "callbackOutcome",
                "callbackMode",
                "declineRate",
                "seed",
                "latencySeconds",
            ],
        )
        ident = f.text("id", PROVIDER_ID)
        unique_id(f, ident, providers)
        kind: ProviderKind = f.choice("kind", ("payin", "payout")) if f.has("kind") else "payin"
        payout = kind == "payout"
        known_rails = frozenset(PAYOUT_RAILS) if payout else METHOD_SLUGS
        rails = f.strings("rails")
        for rail in rails:
            if rail not in known_rails:
                f.fail(f"unknown rail {rail!r} (known: {', '.join(sorted(known_rails))})", "rails")
        behaviour = f.choice("behaviour", PAYOUT_BEHAVIOURS if payout else PAYIN_BEHAVIOURS)
        if behaviour == "decline" and not f.has("declineReason"):
            f.fail("a declining provider needs a declineReason", "declineReason")
        if f.has("declineReason"):
            f.choice("declineReason", PAYOUT_REJECT_REASONS if payout else PAYIN_DECLINE_REASONS)
        outcomes = PAYOUT_CALLBACK_OUTCOMES if payout else PAYIN_CALLBACK_OUTCOMES
        outcome = f.choice("callbackOutcome", outcomes) if f.has("callbackOutcome") else outcomes[0]
        decline_rate = float(f.decimal("declineRate")) if f.has("declineRate") else 0.0
        if not 0 <= decline_rate <= 1:
            f.fail("expected a share between 0 and 1", "declineRate")
        providers[ident] = Provider(
            id=ident,
            name=f.text("name"),
            rails=tuple(rails),
            behaviour=behaviour,
            decline_reason=f.opt_text("declineReason"),
            bank_name=f.opt_text("bankName"),
            beneficiary_name=f.opt_text("beneficiaryName"),
            # A payout provider may answer in its dispatch reply (0: completed at once).
            callback_after_seconds=f.opt_integer("callbackAfterSeconds", 0 if payout else 1),
            callback_outcome=outcome,
            kind=kind,
            callback_mode=f.choice("callbackMode", CALLBACK_MODES)
            if f.has("callbackMode")
            else "once",
            decline_rate=decline_rate,
            seed=f.integer("seed", 0) if f.has("seed") else 0,
            latency_seconds=float(f.decimal("latencySeconds")) if f.has("latencySeconds") else None,
        )
    return providers
