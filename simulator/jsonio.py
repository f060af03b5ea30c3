"""JSON in and out with orjson: Decimal money becomes a JSON number; NaN/Infinity never pass."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from simulator.domain.money import to_json_number


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
