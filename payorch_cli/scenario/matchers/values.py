"""Values as matchers see them: JSON equality (numbers in decimal, never a boolean as a
number), JSON types, the missing value, and how a value is shown in a message."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float | Decimal) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}
DEFAULT_TOLERANCE = Decimal("0.01")
Scope = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Mismatch:
    path: str
    message: str


def is_number(value: Any) -> bool:
    return TYPES["number"](value)


def dec(value: Any) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def json_equal(expected: Any, actual: Any) -> bool:
    if is_number(expected) and is_number(actual):
        return dec(expected) == dec(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            json_equal(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            json_equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


def show(value: Any) -> str:
    import json

    if value is MISSING:
        return "<missing>"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def join_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)
