"""Matchers (a plain value, an object, a list, a `$`-mapping of operators), the operators'
base class and registry, and compiling an expected-value YAML node into a matcher."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from payorch_cli.scenario.expressions import ExprError, compile_value, render, roots
from payorch_cli.scenario.matchers.values import (
    DEFAULT_TOLERANCE,
    MISSING,
    Mismatch,
    Scope,
    dec,
    join_path,
    json_equal,
    show,
)
from payorch_cli.scenario.source import Loc, Node, ScenarioError


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
                out.append(Mismatch(join_path(path, key), f"missing{hint}"))
                continue
            out += matcher.check(value, join_path(path, key), scope)
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
            out += matcher.check(value, join_path(path, index), scope)
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
        return compiled_arg(node)

    def check(self, op: Op, actual: Any, path: str, scope: Scope, ops: Ops) -> str | None:
        """None when `actual` holds, else what is wrong with it."""
        raise NotImplementedError

    def describe(self, op: Op, scope: Scope, ops: Ops) -> str:
        """The operator and its argument, as a failure message shows what was expected."""
        return f"{op.name} {show(shown_arg(op.arg, scope))}"


# ---------------------------------------------------------------------------- compiling


def shown_arg(arg: Any, scope: Scope) -> Any:
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


def compiled_arg(node: Node) -> Any:
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
    return Equals(compiled_arg(node), node.loc)


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
