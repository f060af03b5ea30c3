"""The validation mini-language every fixture file's loader is written in.

`Fields` wraps one YAML mapping: its keys are checked against the allowed ones on entry, then each
getter converts one value or raises `FixtureError("<file>: <where>: <problem>")` naming the exact
entry and key, so a hand-edited copy is always told what is wrong and where.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any, NoReturn


class FixtureError(ValueError):
    """A fixture file is unreadable or inconsistent; the message names file, place and problem."""

    def __init__(self, file: str, where: str, problem: str) -> None:
        super().__init__(f"{file}: {where}: {problem}")
        self.file = file
        self.where = where
        self.problem = problem


class Fields:
    """One YAML mapping under validation: keys are checked against the schema on entry, then each
    getter converts one value or raises a FixtureError naming file, place and key."""

    def __init__(
        self,
        file: str,
        where: str,
        data: Any,
        required: Iterable[str],
        optional: Iterable[str] = (),
        *,
        any_keys: bool = False,
    ) -> None:
        self.file = file
        self.where = where
        if not isinstance(data, dict):
            self.fail(f"expected a mapping, got {_kind(data)}")
        required, optional = tuple(required), tuple(optional)
        allowed = set(required) | set(optional)
        # any_keys: a map keyed by data (currency codes), checked by the caller instead.
        unknown = [] if any_keys else [key for key in data if key not in allowed]
        if unknown:
            self.fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
        missing = [key for key in required if key not in data]
        if missing:
            self.fail(f"missing key {missing[0]!r}")
        self.data: dict[str, Any] = data

    def fail(self, problem: str, key: str | None = None) -> NoReturn:
        raise FixtureError(self.file, self.at(key) if key else self.where, problem)

    def at(self, key: str) -> str:
        return f"{self.where}.{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def text(
        self, key: str, pattern: re.Pattern[str] | None = None, *, id_like: bool = False
    ) -> str:
        value = self.data.get(key)
        # Unquoted 4-digit method ids arrive as ints; accept them so hand edits need no quotes.
        if id_like and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"expected a non-empty string, got {_kind(value)}", key)
        if pattern is not None and not pattern.fullmatch(value):
            self.fail(f"{value!r} does not match {pattern.pattern}", key)
        return value

    def opt_text(self, key: str, pattern: re.Pattern[str] | None = None) -> str | None:
        return self.text(key, pattern) if self.has(key) else None

    def choice(self, key: str, options: Iterable[str | None]) -> Any:
        value = self.data.get(key)
        options = tuple(options)
        if value not in options:
            self.fail(f"{value!r} is not one of {', '.join(map(str, options))}", key)
        return value

    def boolean(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            self.fail(f"expected true or false, got {_kind(value)}", key)
        return value

    def integer(self, key: str, low: int | None = None, high: int | None = None) -> int:
        value = self.data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(f"expected an integer, got {_kind(value)}", key)
        _check_range(value, low, high, lambda problem: self.fail(problem, key))
        return value

    def opt_integer(self, key: str, low: int | None = None) -> int | None:
        return self.integer(key, low) if self.has(key) else None

    def decimal(self, key: str, low: Decimal | None = None, high: Decimal | None = None) -> Decimal:
        return _decimal(self.data.get(key), low, high, lambda problem: self.fail(problem, key))

    def opt_decimal(self, key: str, low: Decimal | None = None) -> Decimal | None:
        return self.decimal(key, low) if self.has(key) else None

    def items(self, key: str, *, default: list[Any] | None = None) -> list[Any]:
        value = self.data.get(key, default)
        if not isinstance(value, list):
            self.fail(f"expected a list, got {_kind(value)}", key)
        return value

    def strings(
        self,
        key: str,
        pattern: re.Pattern[str] | None = None,
        *,
        default: list[Any] | None = None,
        id_like: bool = False,
    ) -> list[str]:
        values = list(self.items(key, default=default))
        for i, value in enumerate(values):
            if id_like and isinstance(value, int) and not isinstance(value, bool):
                value = values[i] = str(value)
            if not isinstance(value, str) or (pattern and not pattern.fullmatch(value)):
                expected = f"a string matching {pattern.pattern}" if pattern else "a string"
                self.fail(f"expected {expected}, got {value!r}", f"{key}[{i}]")
        duplicates = _duplicates(values)
        if duplicates:
            self.fail(f"{duplicates[0]!r} listed twice", key)
        return values


def entries(file: str, data: Any, key: str) -> list[tuple[str, Any]]:
    """The list under a file's single top-level key, each item with a readable place name."""
    top = Fields(file, "(top level)", data, required=[key])
    items = top.items(key)
    places = []
    for i, item in enumerate(items):
        ident = item.get("id") if isinstance(item, dict) else None
        label = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else i
        places.append((f"{key}[{label}]", item))
    return places


def unique_id(fields: Fields, ident: str, seen: Container[str]) -> None:
    if ident in seen:
        fields.fail(f"duplicate id {ident!r} (an earlier entry has it)", "id")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _check_range(value: Any, low: Any, high: Any, fail: Callable[[str], NoReturn]) -> None:
    if low is not None and value < low:
        fail(f"{value} is below the minimum {low}")
    if high is not None and value > high:
        fail(f"{value} is above the maximum {high}")


def _decimal(
    value: Any, low: Decimal | None, high: Decimal | None, fail: Callable[[str], NoReturn]
) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        fail(f"expected a number, got {_kind(value)}")
    try:
        # Via str so a YAML float such as 2.5 becomes Decimal("2.5"), not its binary expansion.
        number = Decimal(str(value).strip())
    except InvalidOperation:
        fail(f"expected a number, got {value!r}")
    if not number.is_finite():
        fail(f"expected a finite number, got {value!r}")
    _check_range(number, low, high, fail)
    return number


def _duplicates(values: Iterable[Any]) -> list[Any]:
    seen: set[Any] = set()
    repeated = []
    for value in values:
        if value in seen:
            repeated.append(value)
        seen.add(value)
    return repeated
