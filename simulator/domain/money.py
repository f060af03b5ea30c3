"""Decimal money: exact inside, rounded per currency only at the edges."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from simulator.domain.errors import ApiError

ZERO = Decimal("0")
CENT = Decimal("0.01")
MAX_CHARGE_USD = Decimal("100000")


_QUANTA = tuple(Decimal(1).scaleb(-decimals) for decimals in range(9))


def quantum(decimals: int) -> Decimal:
    if 0 <= decimals < len(_QUANTA):
        return _QUANTA[decimals]  # made once: every amount of every payment is rounded
    return Decimal(1).scaleb(-decimals)


def round_to(amount: Decimal, decimals: int) -> Decimal:
    # Every amount of every payment is rounded: the common quanta are read straight from the
    # table, without a call to `quantum`.
    if 0 <= decimals < 9:
        return amount.quantize(_QUANTA[decimals], ROUND_HALF_UP)
    return amount.quantize(quantum(decimals), ROUND_HALF_UP)


def usd(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, ROUND_HALF_UP)


def has_decimals_at_most(amount: Decimal, decimals: int) -> bool:
    """Whether `amount` needs no more than `decimals` decimal places. Unlike comparing with
    `round_to`, never overflows: quantizing 1e308 to cents exceeds Decimal's precision."""
    if not amount.is_finite():
        return False
    if 0 <= decimals < len(_POWERS):
        # Exactly when its lowest-terms denominator divides 10**decimals; a third of the cost of
        # reading the exponent (`as_tuple` builds a named tuple), on every payment.
        return _POWERS[decimals] % amount.as_integer_ratio()[1] == 0
    exponent = amount.normalize().as_tuple().exponent
    return isinstance(exponent, int) and exponent >= -decimals


_POWERS = tuple(10**decimals for decimals in range(9))


def parse_amount(value: Any, *, param: str = "amount", code: str = "amount_invalid") -> Decimal:
    """A JSON number > 0 as Decimal. Booleans, strings, NaN and infinities are refused."""
    if value.__class__ is int and value > 0:
        return Decimal(value)  # the common case, exactly Decimal(str(value)), with no text made
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ApiError(code, f"`{param}` must be a number greater than 0.", param=param)
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ApiError(code, f"`{param}` must be a finite number.", param=param) from None
    if not amount.is_finite() or amount <= 0:
        raise ApiError(code, f"`{param}` must be a number greater than 0.", param=param)
    return amount


def dec(value: str | int | float | Decimal) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))
