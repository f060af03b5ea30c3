"""JSON in and out with orjson: Decimal money becomes a JSON number; NaN/Infinity never pass.

It imports nothing of the simulator, so the domain may use it (views render numbers with it)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

_INT64 = 2**63


def to_json_number(amount: Decimal) -> int | float:
    """JSON numbers: whole amounts stay integers while a JSON writer can hold them (64 bits);
    others, and larger ones such as a 1e308 amount echoed in an error, become the closest float."""
    if amount == amount.to_integral_value() and -_INT64 <= amount < _INT64:
        return int(amount)
    return float(amount)


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return to_json_number(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_default)


def plain(value: Any) -> Any:
    """The JSON-compatible copy of a value (Decimals become numbers), for storing."""
    return orjson.loads(dumps(value))


loads = orjson.loads
JSONDecodeError = orjson.JSONDecodeError
