"""`${...}` in scenario values: saved values, vars, matrix cells, env vars, a little arithmetic.

- `"${tx}"` alone keeps the saved value's type (a number stays a number, an object an object);
  inside a longer string it is formatted into the text. (Tavern made every saved value a string
  and needed `!int` tags to undo it.)
- `${payment.amountLocal / 2}`, `${round(before - 10.5, 2)}`: + - * / // % with numbers computed in
  decimal (no 0.1 + 0.2 dust in money), names, `.field` and `[index]` access, and the functions
  round, abs, min, max, len, str, int, float. Nothing else: this is no general eval.
- `${env.NAME}` reads an environment variable (an error if unset), `${env.NAME:-text}` falls back
  to `text`.
- `$${` writes a literal `${`.
Expressions are parsed when the file is loaded, so a typo is a file:line:column error before
anything runs, and the names they use are checked against what earlier steps save.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

_REF = re.compile(r"(?<!\$)\$\{([^{}]*)\}")
_ENV_DEFAULT = re.compile(r"^\s*env\.([A-Za-z_][A-Za-z0-9_]*):-(.*)$", re.DOTALL)

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "round": round,
    "abs": abs,
    "min": min,
    "max": max,
    "len": len,
    "str": lambda v: _text(v),
    "int": int,
    "float": float,
}
_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


class ExprError(ValueError):
    """A bad expression (at load time) or one that cannot be evaluated (at run time)."""


class EnvScope:
    """`env.NAME` lookups; a missing variable is an error, not an empty string.

    `allowed` names the only variables a run may read (None: all of them). Any other reads as
    unset, in both forms, so a scenario from a source the user does not control (an AI agent's
    `run_scenario`) cannot carry the host's tokens into a request or a failure text; `refusal`
    says how to allow one."""

    def __init__(self, allowed: frozenset[str] | None = None, refusal: str = "") -> None:
        self.allowed = allowed
        self.refusal = refusal

    def lookup(self, name: str, default: str | None = None) -> str | None:
        if self.allowed is not None and name not in self.allowed:
            return default
        return os.environ.get(name, default)

    def get(self, name: str) -> str:
        value = self.lookup(name)
        if value is not None:
            return value
        if self.allowed is not None and name not in self.allowed:
            raise ExprError(f"environment variable {name} may not be read here{self.refusal}")
        raise ExprError(f"environment variable {name} is not set (use ${{env.{name}:-x}})")


@dataclass(frozen=True, slots=True)
class Expr:
    source: str
    tree: ast.expr | None  # None for the env-default form
    env_default: tuple[str, str] | None = None

    @property
    def roots(self) -> set[str]:
        """The top-level names used (what must be defined before the expression runs)."""
        if self.tree is None:
            return {"env"}
        names = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}
        return names - set(FUNCTIONS)


def compile_expr(source: str) -> Expr:
    env = _ENV_DEFAULT.match(source)
    if env:
        return Expr(source, None, (env.group(1), env.group(2)))
    if not source.strip():
        raise ExprError("empty ${}")
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"cannot parse ${{{source}}}: {exc.msg}") from None
    for node in ast.walk(tree):
        allowed = (
            ast.Name,
            ast.Load,
            ast.Attribute,
            ast.Subscript,
            ast.Constant,
            ast.BinOp,
            ast.UnaryOp,
            ast.USub,
            ast.UAdd,
            ast.Call,
            *_OPERATORS,
        )
        if not isinstance(node, allowed):
            raise ExprError(
                f"${{{source}}}: {type(node).__name__.lower()} is not allowed (names, .field, "
                "[index], numbers, strings, + - * / // %, and round/abs/min/max/len/str/int/"
                "float only)"
            )
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ExprError(f"${{{source}}}: only {', '.join(FUNCTIONS)} can be called")
    return Expr(source, tree)


def _number(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    return value


def _plain(value: Any) -> Any:
    """Decimal results back to JSON numbers: integral -> int, else float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _lookup(container: Any, key: Any, source: str) -> Any:
    if isinstance(container, EnvScope):
        return container.get(str(key))
    if isinstance(container, Mapping):
        if key not in container:
            shown = ", ".join(sorted(map(str, container))[:12])
            raise ExprError(f"${{{source}}}: no `{key}` here (has: {shown or 'nothing'})")
        return container[key]
    if isinstance(container, list):
        if not isinstance(key, int) or not -len(container) <= key < len(container):
            raise ExprError(f"${{{source}}}: index {key!r} is outside a list of {len(container)}")
        return container[key]
    raise ExprError(f"${{{source}}}: cannot take `{key}` of a {type(container).__name__}")


def evaluate(expr: Expr, scope: Mapping[str, Any]) -> Any:
    if expr.env_default is not None:
        name, default = expr.env_default
        env = scope.get("env")
        return (env if isinstance(env, EnvScope) else EnvScope()).lookup(name, default)
    assert expr.tree is not None
    return _plain(_eval(expr.tree, scope, expr.source))


def _eval(node: ast.expr, scope: Mapping[str, Any], source: str) -> Any:
    if isinstance(node, ast.Constant):
        return _number(node.value)
    if isinstance(node, ast.Name):
        if node.id not in scope:
            raise ExprError(f"${{{source}}}: `{node.id}` is not defined")
        return _number(scope[node.id])
    if isinstance(node, ast.Attribute):
        return _number(_lookup(_eval(node.value, scope, source), node.attr, source))
    if isinstance(node, ast.Subscript):
        key = _plain(_eval(node.slice, scope, source))
        return _number(_lookup(_eval(node.value, scope, source), key, source))
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, scope, source)
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, scope, source), _eval(node.right, scope, source)
        try:
            return _OPERATORS[type(node.op)](left, right)
        except (TypeError, ZeroDivisionError, InvalidOperation) as exc:
            raise ExprError(
                f"${{{source}}}: cannot compute {_plain(left)!r} and {_plain(right)!r} ({exc})"
            ) from None
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [_eval(a, scope, source) for a in node.args]
        try:
            return _number(FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError) as exc:
            raise ExprError(f"${{{source}}}: {node.func.id}(): {exc}") from None
    raise ExprError(f"${{{source}}}: unsupported")  # compile_expr() keeps us from here


def _text(value: Any) -> str:
    value = _plain(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)


@dataclass(frozen=True, slots=True)
class Interp:
    """A string with `${...}` in it. `parts` alternates literal text and expressions."""

    parts: tuple[str | Expr, ...]

    @property
    def exprs(self) -> list[Expr]:
        return [p for p in self.parts if isinstance(p, Expr)]

    def render(self, scope: Mapping[str, Any]) -> Any:
        if len(self.parts) == 1 and isinstance(self.parts[0], Expr):
            return evaluate(self.parts[0], scope)  # the whole string: keep the type
        return "".join(p if isinstance(p, str) else _text(evaluate(p, scope)) for p in self.parts)


def compile_string(text: str) -> str | Interp:
    """A literal string, or an Interp if it holds `${...}`. Raises ExprError."""
    if "${" not in text:
        return text
    parts: list[str | Expr] = []
    position = 0
    for match in _REF.finditer(text):
        literal = text[position : match.start()]
        if literal:
            parts.append(literal.replace("$${", "${"))
        parts.append(compile_expr(match.group(1)))
        position = match.end()
    rest = text[position:]
    if rest:
        parts.append(rest.replace("$${", "${"))
    # What is left of the literal text must hold no `${` but the escaped `$${`.
    leftover = _REF.sub("", text).replace("$${", "")
    if "${" in leftover:
        raise ExprError(f"unclosed or nested ${{ in {text!r}")
    if not any(isinstance(p, Expr) for p in parts):
        return "".join(p for p in parts if isinstance(p, str))
    return Interp(tuple(parts))


def compile_value(value: Any) -> Any:
    """Strings with `${}` inside any structure become Interp leaves. Raises ExprError."""
    if isinstance(value, str):
        return compile_string(value)
    if isinstance(value, dict):
        return {k: compile_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compile_value(v) for v in value]
    return value


def render(value: Any, scope: Mapping[str, Any]) -> Any:
    if isinstance(value, Interp):
        return value.render(scope)
    if isinstance(value, dict):
        return {k: render(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope) for v in value]
    return value


def roots(value: Any) -> set[str]:
    """Every top-level name a compiled value uses."""
    if isinstance(value, Interp):
        return set().union(*(e.roots for e in value.exprs))
    if isinstance(value, dict):
        return set().union(set(), *(roots(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(set(), *(roots(v) for v in value))
    return set()
