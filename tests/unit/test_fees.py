"""fees.py: the capped breakdown, against its definition (each fee `min`-capped in order)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.domain.catalog import Catalog
from simulator.domain.fees import CARD_NETWORK_FEE_USD, HUNDRED, fees_for
from simulator.domain.money import ZERO, usd
from simulator.fixture_loader import load_catalog

CATALOG: Catalog = load_catalog()
cents = st.integers(min_value=1, max_value=10_000_000).map(lambda c: Decimal(c) / 100)
percents = st.decimals(min_value=0, max_value=100, places=2)


def by_definition(
    amount_usd: Decimal,
    platform_pct: Decimal,
    reserve_pct: Decimal,
    percent: Decimal,
    flat: Decimal,
    card: bool,
) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    platform = usd(amount_usd * platform_pct / HUNDRED)
    provider = usd(amount_usd * percent / HUNDRED + flat)
    network = CARD_NETWORK_FEE_USD if card else ZERO
    reserve = usd(amount_usd * reserve_pct / HUNDRED)
    room = amount_usd - reserve
    network = min(network, room)
    provider = min(provider, room - network)
    platform = min(platform, room - network - provider)
    return platform, provider, network, reserve


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(
    cents,
    percents,
    percents,
    percents,
    st.decimals(min_value=0, max_value=50, places=2),
    st.sampled_from(sorted(CATALOG.methods)),
)
def test_fees_are_the_capped_breakdown_to_the_digit(
    amount_usd: Decimal,
    platform_pct: Decimal,
    reserve_pct: Decimal,
    percent: Decimal,
    flat: Decimal,
    method_id: str,
) -> None:
    merchant = replace(
        next(iter(CATALOG.merchants.values())),
        platform_fee_pct=platform_pct,
        rolling_reserve_pct=reserve_pct,
    )
    method = replace(CATALOG.methods[method_id], fee_percent=percent, fee_flat=flat)
    made = tuple(fees_for(amount_usd, merchant, method))
    expected = by_definition(
        amount_usd, platform_pct, reserve_pct, percent, flat, method.channel == "CREDIT_CARD"
    )
    # The stored texts too: equal Decimals can print differently ("1.5" and "1.50").
    assert [str(value) for value in made] == [str(value) for value in expected]
