"""Expected values and their matchers, compiled from YAML nodes.

Rules (docs/scenarios.md has the user's version):
- a mapping matches an object holding at least those keys (extra keys are fine at every level);
- a list matches a list of the same length, item by item, in order (`$contains` for "these, in
  any order, among others");
- a scalar matches an equal value; numbers compare by value in decimal (50 == 50.0), never a
  boolean with a number;
- a mapping whose keys all start with `$` is a matcher: each key is an operator (`$gt`,
  `$regex`...), one `Operator` subclass each, registered by name in `REGISTRY`; several in one
  mapping must all hold.
A new operator is a subclass below, a row in docs/scenarios.md, and its schema entry written into
scenario.schema.json by `python -m payorch_cli.scenario.schema` (a test fails until it is).
Every matcher can say what it expected in a form that diffs well against the actual value: a
passing matcher shows the actual value on both sides, so the diff only shows what failed.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from payorch_cli.scenario.expressions import ExprError, compile_value, render, roots
from payorch_cli.scenario.source import Loc, Node, ScenarioError

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


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


class Matcher:
    loc: Loc

    def check(self, actual: Any, path: str, scope: Scope) -> list[Mismatch]:
        raise NotImplementedError

    def expected_view(self, actual: Any, scope: Scope) -> Any:
        """What the diff shows as expected; the actual value wherever this matcher passes."""
        raise NotImplementedError

    def actual_view(self, actual: Any) -> Any:
        return actual

    def names(self) -> set[str]:
        """Top-level names its `${}` use."""
        return set()

    @property
    def optional(self) -> bool:
        """True when the key may be absent (`$absent`, `$not`...)."""
        return False


@dataclass
class Equals(Matcher):
    value: Any  # compiled (may hold Interp)
    loc: Loc

    def check(self, actual: Any, path: str, scope: Scope) -> list[Mismatch]:
        expected = render(self.value, scope)
        if actual is MISSING:
            return [Mismatch(path, f"missing (expected {show(expected)})")]
        if json_equal(expected, actual):
            return []
        return [Mismatch(path, f"expected {show(expected)}, got {show(actual)}")]

    def expected_view(self, actual: Any, scope: Scope) -> Any:
        return render(self.value, scope)

    def names(self) -> set[str]:
        return roots(self.value)


@dataclass
class ObjectMatcher(Matcher):
    fields: dict[str, Matcher]
    loc: Loc
    exact: bool = False

    def check(self, actual: Any, path: str, scope: Scope) -> list[Mismatch]:
        if not isinstance(actual, dict):
            what = "missing" if actual is MISSING else f"got {show(actual)}"
            return [Mismatch(path or "(body)", f"expected an object, {what}")]
        out: list[Mismatch] = []
        for key, matcher in self.fields.items():
            value = actual.get(key, MISSING)
            if value is MISSING and not matcher.optional:
                near = difflib.get_close_matches(key, list(actual), 1)
                hint = f" (the object has `{near[0]}`)" if near else ""
                out.append(Mismatch(_join(path, key), f"missing{hint}"))
                continue
            out += matcher.check(value, _join(path, key), scope)
        if self.exact:
            extra = sorted(set(actual) - set(self.fields))
            if extra:
                out.append(Mismatch(path or "(body)", f"unexpected keys: {', '.join(extra)}"))
        return out

    def expected_view(self, actual: Any, scope: Scope) -> Any:
        source = actual if isinstance(actual, dict) else {}
        view = {}
        for key, matcher in self.fields.items():
            expected = matcher.expected_view(source.get(key, MISSING), scope)
            if expected is not MISSING:
                view[key] = expected
        return view

    def actual_view(self, actual: Any) -> Any:
        if not isinstance(actual, dict):
            return actual
        if self.exact:
            return {
                k: (self.fields[k].actual_view(v) if k in self.fields else v)
                for k, v in actual.items()
            }
        return {
            key: matcher.actual_view(actual[key]) if key in actual else "<missing>"
            for key, matcher in self.fields.items()
            if key in actual or not matcher.optional
        }

    def names(self) -> set[str]:
        return set().union(set(), *(m.names() for m in self.fields.values()))


@dataclass
class ListMatcher(Matcher):
    items: list[Matcher]
    loc: Loc

    def check(self, actual: Any, path: str, scope: Scope) -> list[Mismatch]:
        if not isinstance(actual, list):
            what = "missing" if actual is MISSING else f"got {show(actual)}"
            return [Mismatch(path, f"expected a list of {len(self.items)}, {what}")]
        if len(actual) != len(self.items):
            return [
                Mismatch(
                    path,
                    f"expected {len(self.items)} items, got {len(actual)} "
                    "(use $contains to check some items only)",
                )
            ]
        out: list[Mismatch] = []
        for index, (matcher, value) in enumerate(zip(self.items, actual, strict=True)):
            out += matcher.check(value, _join(path, index), scope)
        return out

    def expected_view(self, actual: Any, scope: Scope) -> Any:
        source = actual if isinstance(actual, list) else []
        return [
            m.expected_view(source[i] if i < len(source) else MISSING, scope)
            for i, m in enumerate(self.items)
        ]

    def actual_view(self, actual: Any) -> Any:
        if isinstance(actual, list) and len(actual) == len(self.items):
            return [m.actual_view(v) for m, v in zip(self.items, actual, strict=True)]
        return actual

    def names(self) -> set[str]:
        return set().union(set(), *(m.names() for m in self.items))


@dataclass
class Op:
    name: str
    arg: Any  # compiled value, or a Matcher for $not/$each/$len/$contains items/$exact
    loc: Loc


@dataclass
class Ops(Matcher):
    """A `$`-mapping: every operator in it must hold."""

    ops: list[Op]
    loc: Loc
    tolerance: Any = None

    @property
    def optional(self) -> bool:
        return any(REGISTRY[op.name].optional for op in self.ops)

    def check(self, actual: Any, path: str, scope: Scope) -> list[Mismatch]:
        out = []
        for op in self.ops:
            operator = REGISTRY[op.name]
            if actual is MISSING and not operator.optional:
                problem: str | None = f"missing (expected {self.describe(op, scope)})"
            else:
                problem = operator.check(op, actual, path, scope, self)
            if problem:
                out.append(Mismatch(path, problem))
        return out

    def expected_view(self, actual: Any, scope: Scope) -> Any:
        if not self.check(actual, "", scope):
            return actual
        return "<" + " and ".join(self.describe(op, scope) for op in self.ops) + ">"

    def names(self) -> set[str]:
        out: set[str] = roots(self.tolerance)
        for op in self.ops:
            out |= op.arg.names() if isinstance(op.arg, Matcher) else _arg_names(op.arg)
        return out

    def describe(self, op: Op, scope: Scope) -> str:
        return REGISTRY[op.name].describe(op, scope, self)

    def tolerance_value(self, scope: Scope) -> Decimal:
        return DEFAULT_TOLERANCE if self.tolerance is None else dec(render(self.tolerance, scope))


# ---------------------------------------------------------------------------- the operators

REGISTRY: dict[str, Operator] = {}  # every `$op` by name, in the order messages list them


class Operator:
    """One `$op` of a matcher mapping. A subclass gives its `name`, the `schema` of its argument
    (its entry in scenario.schema.json, which `payorch_cli.scenario.schema` writes from this
    registry), how to `compile` the argument and how to `check` a value. Defining the subclass
    registers it."""

    name: ClassVar[str]
    schema: ClassVar[dict[str, Any]]
    optional: ClassVar[bool] = False  # the key may be absent: `check` is given MISSING too
    modifies: ClassVar[str | None] = None  # a setting of that operator, never checked itself

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            REGISTRY[cls.name] = cls()

    def compile(self, node: Node) -> Any:
        """The argument, from its YAML node; a ScenarioError at the node if it is not one."""
        return _compiled(node)

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        """None when `actual` holds, else what is wrong with it."""
        raise NotImplementedError

    def describe(self, op: Op, scope: Scope, ops: Ops) -> str:
        """The operator and its argument, as a failure message shows what was expected."""
        return f"{op.name} {show(_shown(op.arg, scope))}"


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
        value = _compiled(node)
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
        value = _compiled(node)
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
        return f"$approx {show(_shown(op.arg, scope))} ± {ops.tolerance_value(scope)}"


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
        return _compiled(node)  # a substring

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
        tries = [(first.check(item, _join(path, j), scope), j) for j, item in enumerate(actual)]
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
        value = _compiled(node)
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
            found = op.arg.check(item, _join(path, index), scope)
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


# ---------------------------------------------------------------------------- compiling


def _shown(arg: Any, scope: Scope) -> Any:
    """An operator's argument as a message shows it: matchers by what they expect."""
    if isinstance(arg, Matcher):
        return arg.expected_view(MISSING, scope)
    if isinstance(arg, list):
        return [
            a.expected_view(MISSING, scope) if isinstance(a, Matcher) else render(a, scope)
            for a in arg
        ]
    return render(arg, scope)


def _arg_names(arg: Any) -> set[str]:
    if isinstance(arg, list):
        return set().union(set(), *(a.names() if isinstance(a, Matcher) else roots(a) for a in arg))
    return roots(arg)


def _compiled(node: Node) -> Any:
    try:
        return compile_value(node.value())
    except ExprError as exc:
        raise ScenarioError(node.loc, str(exc)) from None


def compile_matcher(node: Node) -> Matcher:
    """A Matcher for an expected-value node. Raises ScenarioError at the offending node."""
    if node.is_map:
        entries = list(node.entries())
        dollar = [k for k, _, _ in entries if k.startswith("$")]
        if dollar and len(dollar) != len(entries):
            plain = next(k for k, _, _ in entries if not k.startswith("$"))
            raise ScenarioError(
                node.loc,
                f"a mapping is either a matcher (all keys start with $) or an object; this one "
                f"mixes `{dollar[0]}` and `{plain}` (nest the matcher under its key, or write "
                f"`$eq` for a literal)",
            )
        if dollar:
            return _compile_ops(node, entries)
        return ObjectMatcher({k: compile_matcher(v) for k, _, v in entries}, node.loc)
    if node.is_seq:
        return ListMatcher([compile_matcher(item) for item in node.items()], node.loc)
    return Equals(_compiled(node), node.loc)


def _compile_ops(node: Node, entries: list[tuple[str, Node, Node]]) -> Ops:
    ops: list[Op] = []
    tolerance = None
    names = [k for k, _, _ in entries]
    for key, key_node, value in entries:
        operator = REGISTRY.get(key)
        if operator is None:
            near = difflib.get_close_matches(key, list(REGISTRY), 1)
            hint = f"; did you mean `{near[0]}`?" if near else f" (known: {', '.join(REGISTRY)})"
            raise ScenarioError(key_node.loc, f"unknown matcher `{key}`{hint}")
        if operator.modifies is not None:  # $tolerance, the one setting: kept beside the ops
            if operator.modifies not in names:
                raise ScenarioError(key_node.loc, f"`{key}` goes with `{operator.modifies}`")
            tolerance = operator.compile(value)
            continue
        ops.append(Op(key, operator.compile(value), value.loc))
    return Ops(ops, node.loc, tolerance)


def _number_arg(node: Node, key: str) -> Any:
    value = _compiled(node)
    if not (is_number(value) or _interp(value)):
        raise ScenarioError(node.loc, f"`{key}` takes a number, not a {node.kind}")
    return value


def _interp(value: Any) -> bool:
    from payorch_cli.scenario.expressions import Interp

    return isinstance(value, Interp)
