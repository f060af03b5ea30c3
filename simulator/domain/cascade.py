"""The provider cascade: try each provider configured for a rail, in order, until one accepts.

Sandbox always accepts through the first provider (spec rule 6). Production asks each simulated
provider's live behaviour (`providers/world.py`: fixture, overrides, incidents), so declines,
outages, timeouts and `cascade_exhausted` are reachable.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from simulator.domain.catalog import CATALOGUE_CARD_DECLINES, Environment, PaymentMethod, Provider
from simulator.domain.errors import ApiError
from simulator.domain.providers.world import CallbackPlan, ProviderReply, ProviderWorld

SANDBOX_PROVIDER = Provider(
    id="sandbox",
    name="Sandbox Provider",
    rails=(),
    behaviour="accept",
    decline_reason=None,
    bank_name="Sandbox Bank",
    beneficiary_name="Payorch Sandbox",
    callback_after_seconds=None,
)


class Attempt(NamedTuple):
    """One provider the cascade tried and what it answered (NamedTuples, these and `Routed`:
    made on every payment, where a frozen dataclass sets each field through
    `object.__setattr__`)."""

    provider: str
    outcome: str


class Routed(NamedTuple):
    """The provider that took the charge, and (production) what it will do after: its callback,
    and every attempt the cascade made on the way."""

    provider: Provider
    callback: CallbackPlan | None = None
    attempts: tuple[Attempt, ...] = ()


def route(
    method: PaymentMethod,
    providers: dict[str, Provider],
    environment: Environment,
    enabled_for_shop: bool,
    world: ProviderWorld,
) -> Routed:
    if environment == "sandbox":
        first = providers.get(method.provider_ids[0]) if method.provider_ids else None
        return Routed(first or SANDBOX_PROVIDER)
    attempts: list[Attempt] = []
    for provider_id in method.provider_ids:
        reply = world.charge(provider_id)
        outcome = reply.outcome
        if outcome == "accepted" and not attempts:
            return _taken_at_once(reply)
        provider = reply.provider
        if outcome == "unavailable" or outcome == "timed_out":
            # timed_out: the platform stopped waiting (providers.world.PROVIDER_TIMEOUT_SECONDS).
            attempts.append(Attempt(provider.id, outcome))
            continue
        if outcome == "declined":
            reason = reply.reason or "declined"
            if reason in CATALOGUE_CARD_DECLINES and method.channel == "CREDIT_CARD":
                # An issuer decline is final for the charge: cascading would retry a declined card.
                raise ApiError(
                    "card_declined" if reason == "card_declined" else reason,
                    decline_code=reason,
                    details={"paymentMethodId": method.id},
                )
            attempts.append(Attempt(provider.id, f"declined:{reason}"))
            continue
        if outcome == "no_instructions":
            raise ApiError(
                "payment_instructions_unavailable",
                f"The provider returned neither a payment page nor instructions for "
                f"{method.name}; the transaction was not created.",
                details={"provider": provider.id},
            )
        attempts.append(Attempt(provider.id, "accepted"))
        return Routed(provider, reply.callback, tuple(attempts))
    raise cascade_exhausted(method.id, enabled_for_shop=enabled_for_shop, attempts=attempts)


@lru_cache(maxsize=256)
def _taken_at_once(reply: ProviderReply) -> Routed:
    """The routing of a charge the rail's first provider took. An accepting provider gives the
    same answer (compared by identity) until it is scripted again, so this is built once per
    script, not per payment: the production path's most common case."""
    provider = reply.provider
    return Routed(provider, reply.callback, (Attempt(provider.id, "accepted"),))


def cascade_exhausted(
    method_id: str | None,
    *,
    enabled_for_shop: bool,
    attempts: list[Attempt] | None = None,
    known: bool = True,
) -> ApiError:
    """The spec's answer (POST /payments, rule 4) both when no provider took the charge and,
    with `paymentMethodEnabledForShop` false, when the code is not from the shop's listing:
    `known` false says no method has that id at all."""
    return ApiError(
        "cascade_exhausted",
        _hint(method_id, enabled_for_shop=enabled_for_shop, known=known),
        param="paymentMethodId",
        details={
            "reason": "no_provider_for_method_region",
            "paymentMethodId": method_id,
            "paymentMethodEnabledForShop": enabled_for_shop,
            "attempts": [{"provider": a.provider, "outcome": a.outcome} for a in attempts or []],
        },
    )


def _hint(method_id: str | None, *, enabled_for_shop: bool, known: bool) -> str:
    if enabled_for_shop:
        return (
            "The method is enabled for your shop but no provider accepted the charge; retry "
            "once, then report the requestId."
        )
    listing = "take a paymentMethodId from `payorch methods` or GET /payment-methods."
    if not known:
        return f"No payment method has the id `{method_id}`; {listing}"
    return f"Method `{method_id}` is not in your shop's listing here; {listing}"
