"""JSON in and out with orjson: Decimal money becomes a JSON number; NaN/Infinity never pass."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

_INT64 = 2**63


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        # Whole amounts stay integers while orjson can write them (64 bits); beyond that, such
        # as a 1e308 amount echoed in an error, a float keeps the response writable.
        if value == value.to_integral_value() and -_INT64 <= value < _INT64:
            return int(value)
        return float(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_default)


def plain(value: Any) -> Any:
    """The JSON-compatible copy of a value (Decimals become numbers), for storing."""
    return orjson.loads(dumps(value))


loads = orjson.loads
JSONDecodeError = orjson.JSONDecodeError
