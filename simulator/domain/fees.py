"""Fee breakdown of a pay-in, in USD.

platform = merchant's platform fee % of the USD amount; provider = the method's percent + flat;
network = a fixed card-network fee on card-channel rails. Fees never exceed what the charge leaves
after the rolling reserve, so a completed payment never takes the balance below zero.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from simulator.domain.catalog import Merchant, PaymentMethod
from simulator.domain.money import CENT, ZERO

HUNDRED = Decimal(100)
CARD_NETWORK_FEE_USD = Decimal("0.10")


class FeeBreakdown(NamedTuple):
    """Made on every payment: a NamedTuple is built in a fraction of a frozen dataclass's time."""

    platform: Decimal
    provider: Decimal
    network: Decimal
    reserve: Decimal

    @property
    def total(self) -> Decimal:
        return self.platform + self.provider + self.network

    def as_json(self) -> dict[str, Decimal]:
        return {
            "platform": self.platform,
            "provider": self.provider,
            "network": self.network,
            "total": self.total,
        }


def fees_for(amount_usd: Decimal, merchant: Merchant, method: PaymentMethod) -> FeeBreakdown:
    # Rounded to cents as `money.usd` does, inline (three calls fewer on every payment).
    platform = (amount_usd * merchant.platform_fee_pct / HUNDRED).quantize(CENT, ROUND_HALF_UP)
    provider = (amount_usd * method.fee_percent / HUNDRED + method.fee_flat).quantize(
        CENT, ROUND_HALF_UP
    )
    network = CARD_NETWORK_FEE_USD if method.channel == "CREDIT_CARD" else ZERO
    reserve = (amount_usd * merchant.rolling_reserve_pct / HUNDRED).quantize(CENT, ROUND_HALF_UP)
    # Cap in order network -> provider -> platform so the total never exceeds the room left
    # after the reserve (each as `min(fee, room)`: the fee unless the room is smaller).
    room = amount_usd - reserve
    if room < network:
        network = room
    room = room - network
    if room < provider:
        provider = room
    room = room - provider
    if room < platform:
        platform = room
    return FeeBreakdown(platform, provider, network, reserve)
