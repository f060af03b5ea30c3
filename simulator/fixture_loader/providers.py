"""providers.yaml: the simulated providers, the rails each serves and how each behaves."""

from __future__ import annotations

import re
from typing import Any, Literal

from payorch.vocabulary import PAYMENT_METHOD_SLUGS
from simulator.domain.catalog import Provider
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
            optional=["declineReason", "bankName", "beneficiaryName", "callbackOutcome"],
        )
        ident = f.text("id", PROVIDER_ID)
        unique_id(f, ident, providers)
        rails = f.strings("rails")
        for rail in rails:
            if rail not in METHOD_SLUGS:
                f.fail(f"unknown rail {rail!r} (known: {', '.join(sorted(METHOD_SLUGS))})", "rails")
        behaviour = f.choice("behaviour", ("accept", "decline", "no_instructions", "outage"))
        if behaviour == "decline" and not f.has("declineReason"):
            f.fail("a declining provider needs a declineReason", "declineReason")
        outcome: Literal["paid", "failed"] = (
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
