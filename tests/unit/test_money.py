"""money.py: the decimal-places test every amount goes through, against its definition."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import example, given, settings
from hypothesis import strategies as st

from simulator.domain.money import has_decimals_at_most


def by_exponent(amount: Decimal, decimals: int) -> bool:
    """The definition: the exponent of the amount without trailing zeros (`normalize` rounds to
    the context's 28 digits, so it is the definition only up to 28 significant digits; an
    amount from JSON has at most 17, or is a whole number)."""
    exponent = amount.normalize().as_tuple().exponent
    return isinstance(exponent, int) and exponent >= -decimals


@settings(max_examples=2000, deadline=None)
@given(
    st.decimals(allow_nan=True, allow_infinity=True).filter(
        lambda d: not d.is_snan() and len(d.as_tuple().digits) <= 28
    ),
    st.integers(min_value=-3, max_value=12),
)
@example(Decimal("1e308"), 2)
@example(Decimal("1e-300"), 8)
@example(Decimal("10.500"), 1)
@example(Decimal("10.005"), 2)
@example(Decimal("-0.00"), 0)
@example(Decimal("1E+2"), -2)
@example(Decimal("1E+1"), -2)
def test_decimal_places_as_the_exponent_says(amount: Decimal, decimals: int) -> None:
    assert has_decimals_at_most(amount, decimals) is by_exponent(amount, decimals)


def test_past_28_digits_it_is_exact() -> None:
    assert not has_decimals_at_most(Decimal("127009993452436620850145797.67"), 1)
    assert has_decimals_at_most(Decimal("127009993452436620850145797.67"), 2)
    assert has_decimals_at_most(Decimal(10**40 + 1), 0)
