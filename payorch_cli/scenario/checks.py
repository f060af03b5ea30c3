"""The checks every part of a scenario file shares: problems gathered with their file:line:column
(a file with problems never starts running), mappings with known keys ("did you mean"), strings,
`${...}` templates and the names they use, durations, matchers, saved-state and credential names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from typing import Any

from payorch_cli.durations import DurationError, parse_duration
from payorch_cli.scenario.expressions import ExprError, compile_string, compile_value
from payorch_cli.scenario.matchers import Matcher, compile_matcher
from payorch_cli.scenario.model import BUILTINS
from payorch_cli.scenario.source import Loc, Node, ScenarioError

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The server's rule for saved-state names (/_sim/state), checked before anything runs.
STATE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")

CredentialCheck = Callable[[str], str | None]  # name -> problem, or None if it resolves


def did_you_mean(key: str, options: Iterable[str]) -> str:
    near = difflib.get_close_matches(key, list(options), 1, 0.6)
    return f"; did you mean `{near[0]}`?" if near else ""


class Checker:
    """Checks parts of one file, gathering every problem in `errors`."""

    def __init__(self, file: str, check_credential: CredentialCheck | None) -> None:
        self.file = file
        self.errors: list[ScenarioError] = []
        self.check_credential = check_credential

    def error(self, loc: Loc, message: str) -> None:
        self.errors.append(ScenarioError(loc, message))

    def mapping(self, node: Node, what: str) -> list[tuple[str, Node, Node]] | None:
        if not node.is_map:
            self.error(node.loc, f"{what} must be a mapping, not a {node.kind}")
            return None
        try:
            return list(node.entries())
        except ScenarioError as exc:
            self.errors.append(exc)
            return None

    def keys(
        self, entries: list[tuple[str, Node, Node]], allowed: Iterable[str], what: str
    ) -> dict[str, Node]:
        allowed = list(allowed)
        out = {}
        for key, key_node, value in entries:
            if key not in allowed:
                self.error(
                    key_node.loc,
                    f"unknown key `{key}` in {what}"
                    f"{did_you_mean(key, allowed)} (allowed: {', '.join(allowed)})",
                )
            else:
                out[key] = value
        return out

    def compiled(self, node: Node) -> Any:
        try:
            return compile_value(node.value())
        except (ExprError, ScenarioError) as exc:
            self.error(getattr(exc, "loc", node.loc), getattr(exc, "message", str(exc)))
            return None

    def string(self, node: Node, what: str) -> str | None:
        if not (node.is_scalar and node.kind in ("string", "number")):
            self.error(node.loc, f"{what} must be a string, not a {node.kind}")
            return None
        return str(node.raw.value)

    def template(self, node: Node, what: str) -> Any:
        text = self.string(node, what)
        if text is None:
            return None
        try:
            return compile_string(text)
        except ExprError as exc:
            self.error(node.loc, str(exc))
            return None

    def state_name(self, node: Node, what: str) -> str | None:
        name = self.string(node, what)
        if name is not None and not STATE_NAME.match(name):
            self.error(
                node.loc,
                f"{what}: {name!r} is not a saved state's name (1 to 64 characters from "
                "A-Z a-z 0-9 . _ -, not starting with a dot)",
            )
            return None
        return name

    def duration(self, node: Node, what: str) -> float | None:
        if not node.is_scalar or node.kind not in ("string", "number"):
            self.error(node.loc, f"{what} must be a duration like 90s, 5m, 25h or 2d")
            return None
        try:
            return parse_duration(node.value())
        except DurationError as exc:
            self.error(node.loc, f"{what}: {exc}")
            return None

    def matcher(self, node: Node) -> Matcher | None:
        try:
            return compile_matcher(node)
        except ScenarioError as exc:
            self.errors.append(exc)
            return None

    def names(self, used: set[str], loc: Loc, defined: set[str], where: str) -> None:
        for name in sorted(used - defined - set(BUILTINS)):
            options = sorted(defined | set(BUILTINS))
            self.error(
                loc,
                f"${{{name}}} is not defined {where}{did_you_mean(name, options)} "
                f"(defined here: {', '.join(options)})",
            )

    def credential(self, node: Node, value: Any) -> None:
        if isinstance(value, str) and self.check_credential is not None:
            problem = self.check_credential(value)
            if problem:
                self.error(node.loc, problem)

    def duration_or(self, node: Node, what: str, *, zero: bool = False) -> float | None:
        """A duration; `null` (and `0` where `zero`) pass through as no delay / never."""
        if node.is_null:
            return None
        if zero and node.is_scalar and node.value() in (0, "0", "0s"):
            return 0.0
        return self.duration(node, what)

    def id_path(self, node: Node, pattern: str, what: str) -> Any:
        text = self.string(node, what)
        if text is None:
            return None
        try:
            return compile_string(pattern.format(text))
        except ExprError as exc:
            self.error(node.loc, str(exc))
            return None
