"""The matcher operators (`$gt`, `$regex`, `$contains`...): one `Operator` subclass each;
defining it registers it in `REGISTRY`."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, ClassVar

from payorch_cli.scenario.expressions import render
from payorch_cli.scenario.matchers.base import (
    Equals,
    Matcher,
    ObjectMatcher,
    Op,
    Operator,
    Ops,
    compile_matcher,
    compiled_arg,
    shown_arg,
)
from payorch_cli.scenario.matchers.values import (
    MISSING,
    TYPES,
    Scope,
    dec,
    is_number,
    join_path,
    json_equal,
    show,
)
from payorch_cli.scenario.source import Node, ScenarioError


class _Flag(Operator):
    def compile(self, node: Node) -> Any:
        if node.value() is not True:
            raise ScenarioError(node.loc, f"write `{self.name}: true`")
        return True


class AnyValue(_Flag):
    name = "$any"
    schema: ClassVar[dict[str, Any]] = {"const": True, "description": "Present, any value."}

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        return None


class Absent(_Flag):
    name = "$absent"
    schema: ClassVar[dict[str, Any]] = {"const": True, "description": "The key must not be there."}
    optional = True

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        return None if actual is MISSING else f"expected no such key, got {show(actual)}"


class TypeIs(Operator):
    name = "$type"
    schema: ClassVar[dict[str, Any]] = {
        "description": "JSON type(s).",
        "oneOf": [{"enum": list(TYPES)}, {"type": "array", "items": {"enum": list(TYPES)}}],
    }

    def compile(self, node: Node) -> Any:
        value = node.value()
        wanted = value if isinstance(value, list) else [value]
        bad = [t for t in wanted if t not in TYPES]
        if bad or not wanted:
            raise ScenarioError(
                node.loc,
                f"unknown type {show(bad[0] if bad else value)}; one of {', '.join(TYPES)}",
            )
        return value

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        wanted = render(op.arg, scope)
        wanted = wanted if isinstance(wanted, list) else [wanted]
        if any(TYPES[t](actual) for t in wanted):
            return None
        return f"expected {' or '.join(wanted)}, got {show(actual)}"


class Regex(Operator):
    name = "$regex"
    schema: ClassVar[dict[str, Any]] = {"type": "string", "description": "re.search on a string."}

    def compile(self, node: Node) -> Any:
        value = compiled_arg(node)
        if isinstance(value, str):
            try:
                re.compile(value)
            except re.error as exc:
                raise ScenarioError(node.loc, f"bad regular expression: {exc}") from None
        elif not _interp(value):
            raise ScenarioError(node.loc, "`$regex` takes a string")
        return value

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        pattern = render(op.arg, scope)
        if isinstance(actual, str) and re.search(pattern, actual):
            return None
        return f"expected a string matching /{pattern}/, got {show(actual)}"


class _Comparison(Operator):
    """A number against a bound: the argument is a number (or `${...}`)."""

    schema: ClassVar[dict[str, Any]] = {"type": ["number", "string"]}

    def compile(self, node: Node) -> Any:
        return _number_arg(node, self.name)

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        bound = render(op.arg, scope)
        if not is_number(actual):
            return f"expected a number ({op.name} {show(bound)}), got {show(actual)}"
        if self.holds(dec(actual), bound, scope, ops):
            return None
        return f"expected {ops.describe(op, scope)}, got {show(actual)}"

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        raise NotImplementedError


class Greater(_Comparison):
    name = "$gt"

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        return value > dec(bound)


class GreaterOrEqual(_Comparison):
    name = "$gte"

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        return value >= dec(bound)


class Less(_Comparison):
    name = "$lt"

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        return value < dec(bound)


class LessOrEqual(_Comparison):
    name = "$lte"

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        return value <= dec(bound)


class Between(_Comparison):
    name = "$between"
    schema: ClassVar[dict[str, Any]] = {
        "type": "array",
        "minItems": 2,
        "maxItems": 2,
        "description": "[low, high], inclusive.",
    }

    def compile(self, node: Node) -> Any:
        value = compiled_arg(node)
        if not (isinstance(value, list) and len(value) == 2):
            raise ScenarioError(node.loc, "`$between` takes [low, high]")
        return value

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        low, high = (dec(b) for b in bound)
        return low <= value <= high


class Approx(_Comparison):
    name = "$approx"

    def holds(self, value: Decimal, bound: Any, scope: Scope, ops: Ops) -> bool:
        return abs(value - dec(bound)) <= ops.tolerance_value(scope)

    def describe(self, op: Op, scope: Scope, ops: Ops) -> str:
        return f"$approx {show(shown_arg(op.arg, scope))} ± {ops.tolerance_value(scope)}"


class Tolerance(Operator):
    name = "$tolerance"
    schema: ClassVar[dict[str, Any]] = {
        "type": ["number", "string"],
        "description": "For $approx; default 0.01.",
    }
    modifies = "$approx"

    def compile(self, node: Node) -> Any:
        return _number_arg(node, self.name)


class Contains(Operator):
    name = "$contains"
    schema: ClassVar[dict[str, Any]] = {
        "description": "A list holding items matching these (any order, each a distinct item), "
        "or a string holding this substring."
    }

    def compile(self, node: Node) -> Any:
        if node.is_seq:
            return [compile_matcher(item) for item in node.items()]
        if node.is_map:
            return [compile_matcher(node)]
        return compiled_arg(node)  # a substring

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        if isinstance(actual, str) and not isinstance(op.arg, list):
            needle = render(op.arg, scope)
            return (
                None
                if str(needle) in actual
                else (f"expected a string containing {show(needle)}, got {show(actual)}")
            )
        if not isinstance(actual, list):
            return f"expected a list, got {show(actual)}"
        wanted: list[Matcher] = op.arg if isinstance(op.arg, list) else [Equals(op.arg, op.loc)]
        # Each expected item needs its own actual item (a bipartite matching, so one actual
        # item never satisfies two expected ones: the bug Tavern's list_any_order had).
        fits = [
            [j for j, item in enumerate(actual) if not m.check(item, path, scope)] for m in wanted
        ]
        owner: dict[int, int] = {}

        def place(i: int, seen: set[int]) -> bool:
            for j in fits[i]:
                if j in seen:
                    continue
                seen.add(j)
                if j not in owner or place(owner[j], seen):
                    owner[j] = i
                    return True
            return False

        unmatched = [i for i in range(len(wanted)) if not place(i, set())]
        if not unmatched:
            return None
        first = wanted[unmatched[0]]
        shown = show(first.expected_view(MISSING, scope))
        more = f" (and {len(unmatched) - 1} more expected items)" if len(unmatched) > 1 else ""
        if not actual:
            return f"no item matches {shown}: the list is empty{more}"
        # Say why the nearest item is not it: that is usually the whole story.
        tries = [(first.check(item, join_path(path, j), scope), j) for j, item in enumerate(actual)]
        closest, _ = min(tries, key=lambda t: len(t[0]))
        why = "; ".join(f"{m.path}: {m.message}" for m in closest[:3])
        return f"no item matches {shown}{more}; closest: {why} (among {len(actual)} items)"


class _Nested(Operator):
    """The argument is itself an expected value (a matcher)."""

    schema: ClassVar[dict[str, Any]] = {"$ref": "#/$defs/expected"}

    def compile(self, node: Node) -> Any:
        return compile_matcher(node)


class Length(_Nested):
    name = "$len"

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        if not isinstance(actual, list | str | dict):
            return f"expected something with a length, got {show(actual)}"
        found = op.arg.check(len(actual), path, scope)
        return f"length {len(actual)}: {found[0].message}" if found else None


class OneOf(Operator):
    name = "$in"
    schema: ClassVar[dict[str, Any]] = {"type": "array"}

    def compile(self, node: Node) -> Any:
        value = compiled_arg(node)
        if not isinstance(value, list):
            raise ScenarioError(node.loc, "`$in` takes a list of values")
        return value

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        options = render(op.arg, scope)
        if any(json_equal(o, actual) for o in options):
            return None
        return f"expected one of {show(options)}, got {show(actual)}"


class Not(_Nested):
    name = "$not"
    optional = True

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        if actual is MISSING:
            return None
        if op.arg.check(actual, path, scope):
            return None
        return f"expected not {show(op.arg.expected_view(MISSING, scope))}, got {show(actual)}"


class Each(_Nested):
    name = "$each"

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        if not isinstance(actual, list):
            return f"expected a list, got {show(actual)}"
        for index, item in enumerate(actual):
            found = op.arg.check(item, join_path(path, index), scope)
            if found:
                return f"item [{index}]: {found[0].path}: {found[0].message}"
        return None


class Exact(Operator):
    name = "$exact"
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "description": "An object with exactly these keys.",
    }

    def compile(self, node: Node) -> Any:
        if not node.is_map:
            raise ScenarioError(node.loc, "`$exact` takes a mapping of every expected key")
        matcher = compile_matcher(node)
        if not isinstance(matcher, ObjectMatcher):
            raise ScenarioError(node.loc, "`$exact` takes a plain mapping, not a matcher")
        matcher.exact = True
        return matcher

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        found = op.arg.check(actual, path, scope)
        return "; ".join(f"{m.path}: {m.message}" for m in found) or None


class EqualTo(Operator):
    name = "$eq"
    schema: ClassVar[dict[str, Any]] = {"description": "A literal value ($-keys included)."}

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        expected = render(op.arg, scope)
        return (
            None
            if json_equal(expected, actual)
            else (f"expected {show(expected)}, got {show(actual)}")
        )


def _number_arg(node: Node, key: str) -> Any:
    value = compiled_arg(node)
    if not (is_number(value) or _interp(value)):
        raise ScenarioError(node.loc, f"`{key}` takes a number, not a {node.kind}")
    return value


def _interp(value: Any) -> bool:
    from payorch_cli.scenario.expressions import Interp

    return isinstance(value, Interp)
