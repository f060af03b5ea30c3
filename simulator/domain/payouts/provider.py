"""The payout provider a payout is dispatched to: the spec's simulated driver, and the answer any
provider gives (`Dispatch`). In production the provider world's scripted behaviour applies on top
(`PayoutService.dispatch`)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Protocol

from simulator.domain.catalog import PayoutMethod
from simulator.domain.ids import hex_token
from simulator.domain.providers.world import CallbackPlan

SIMULATED_PROVIDER = "simulated"


@dataclass(frozen=True, slots=True)
class Dispatch:
    accepted: bool
    provider_ref: str | None = None
    failure_reason: str | None = None
    # The provider did not answer (a scripted outage): 503, not a rejection of the recipient.
    unavailable: bool = False
    # Production: when and how the provider's webhook will settle the accepted payout (None: the
    # spec's simulated driver, which completes it at once).
    callback: CallbackPlan | None = None


class PayoutProvider(Protocol):
    name: str

    async def dispatch(self, method: PayoutMethod, recipient: dict[str, str]) -> Dispatch: ...


class SimulatedPayoutProvider:
    """The spec's simulated driver: rejects the recipients its method's fixture names."""

    name = SIMULATED_PROVIDER

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng  # draws the `providerRef`s

    async def dispatch(self, method: PayoutMethod, recipient: dict[str, str]) -> Dispatch:
        # A real provider call is I/O: yield, so concurrent requests interleave here as they
        # would in production (the debit is already recorded, so none can overspend).
        await asyncio.sleep(0)
        for rule in method.rejections:
            if recipient.get(rule.field) == rule.value:
                return Dispatch(False, failure_reason=rule.failure_reason)
        return Dispatch(True, provider_ref=f"sim_{hex_token(self._rng, 10)}")
