"""Reading a step's own keys, the ones several kinds share: `headers`, `expect` (status, error,
json, headers), `save` and `retry`; their schemas (`FIELD_SCHEMAS`); the names a step's `${...}`
use."""

from __future__ import annotations

import re
from typing import Any

from payorch_cli.scenario.checks import IDENTIFIER, Checker
from payorch_cli.scenario.expressions import roots
from payorch_cli.scenario.matchers import Equals, Matcher, ObjectMatcher, Op, Ops
from payorch_cli.scenario.model import BUILTINS, Expectation, HttpCall, Retry, SaveRule, Step
from payorch_cli.scenario.source import Loc, Node

PATH = re.compile(r"^(?:[^.\[\]]+|\[\d+\])(?:\.[^.\[\]]+|\[\d+\]|\.\d+)*$")
STATUS_CLASS = re.compile(r"^([1-5])xx$")
DURATION_PATTERN = r"^((\d+(\.\d+)?)(ms|s|m|h|d|w))+$|^\d+(\.\d+)?$"


def duration_schema(
    description: str = "A duration: 90s, 5m, 25h, 2d, 1h30m, 500ms, or seconds.",
    *,
    null: bool = False,
    zero: bool = False,
) -> dict[str, Any]:
    """A duration's schema; `null` and `zero` also take null (never) and 0 (no delay)."""
    options: list[dict[str, Any]] = [
        {"type": "string", "pattern": DURATION_PATTERN},
        {"type": "number", "exclusiveMinimum": 0},
    ]
    if null:
        options.append({"type": "null"})
    if zero:
        options.append({"const": 0})
    return {"description": description, "oneOf": options}


EXPECTED = {"$ref": "#/$defs/expected"}
HEADERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": ["string", "number"]},
}
# The schema of each key a step may have besides its kind's (StepKind.keys).
FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "name": {"type": "string"},
    "as": {
        "type": "string",
        "description": "A credential from `payorch keys`: "
        "SHOP_OR_MERCHANT[/sandbox|/production][/publishable], a raw key, or none.",
    },
    "headers": HEADERS_SCHEMA,
    "expect": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "status": {
                "description": 'A code (201), a class ("4xx"), a list of codes, or a matcher. '
                "Default: 2xx unless `error` is given.",
                "anyOf": [
                    {"type": "integer"},
                    {"type": "string", "pattern": "^[1-5]xx$"},
                    {"type": "array", "items": {"type": "integer"}},
                    {"$ref": "#/$defs/operators"},
                ],
            },
            "error": {
                "description": "The error code, or a subset of the error object.",
                "anyOf": [{"type": "string"}, EXPECTED],
            },
            "json": EXPECTED,
            "headers": {"type": "object", "additionalProperties": EXPECTED},
        },
    },
    "save": {
        "type": "object",
        "propertyNames": {"pattern": IDENTIFIER.pattern},
        "additionalProperties": {
            "oneOf": [
                {"type": "string", "description": "A JSON path: a.b[0].c, or . for all."},
                {
                    "type": "object",
                    "required": ["header"],
                    "additionalProperties": False,
                    "properties": {"header": {"type": "string"}},
                },
            ]
        },
    },
    "retry": {
        "type": "object",
        "required": ["attempts"],
        "additionalProperties": False,
        "properties": {
            "attempts": {"type": "integer", "minimum": 1},
            "interval": duration_schema(),
        },
    },
}


def expect_matchers(expect: Expectation) -> list[Matcher]:
    found = [expect.status, expect.error, expect.json, *expect.headers.values()]
    return [m for m in found if m is not None]


def matcher_names(matchers: list[Matcher]) -> set[str]:
    """The top-level names the `${...}` of these matchers use."""
    return set().union(set(), *(m.names() for m in matchers))


def step_roots(step: Step) -> set[str]:
    """The top-level names a step's `${...}` use (its action's, expectations', credential's)."""
    used = roots(step.as_)
    if step.http:
        call = step.http
        used |= roots(call.path) | roots(call.headers) | roots(call.query) | roots(call.body)
    if step.expect:
        used |= matcher_names(expect_matchers(step.expect))
    if step.event:
        matchers = [m for m in (step.event.match, *step.event.headers.values()) if m is not None]
        used |= matcher_names(matchers)
    return used


class StepChecker(Checker):
    """The checks of a step's shared keys, on top of those of any part of a file."""

    def check_call(self, call: HttpCall, loc: Loc, defined: set[str], where: str) -> None:
        used = roots(call.path) | roots(call.headers) | roots(call.query) | roots(call.body)
        self.names(used | roots(call.raw), loc, defined, where)

    def headers(self, node: Node) -> dict[str, Any]:
        entries = self.mapping(node, "`headers`")
        out = {}
        for key, _, value in entries or []:
            if value.is_map or value.is_seq:
                self.error(value.loc, f"header `{key}` must be a string")
                continue
            out[key] = self.template(value, f"header `{key}`")
        return out

    def expect(self, node: Node) -> Expectation | None:
        entries = self.mapping(node, "`expect`")
        if entries is None:
            return None
        fields = self.keys(entries, ("status", "error", "json", "headers"), "`expect`")
        out = Expectation(node.loc)
        if "status" in fields:
            out.status = self.status(fields["status"])
        if "error" in fields:
            error = fields["error"]
            if error.is_scalar and error.kind == "string":
                code = self.compiled(error)
                out.error = ObjectMatcher({"code": Equals(code, error.loc)}, error.loc)
            else:
                out.error = self.matcher(error)
        if "json" in fields:
            out.json = self.matcher(fields["json"])
        if "headers" in fields:
            for key, _, value in self.mapping(fields["headers"], "`expect.headers`") or []:
                matcher = self.matcher(value)
                if matcher is not None:
                    out.headers[key] = matcher
        return out

    def status(self, node: Node) -> Matcher | None:
        value = node.value() if node.is_scalar else None
        if isinstance(value, int) and not isinstance(value, bool):
            return Equals(value, node.loc)
        if isinstance(value, str) and STATUS_CLASS.match(value):
            low = int(value[0]) * 100
            return Ops([Op("$between", [low, low + 99], node.loc)], node.loc)
        if node.is_seq:
            codes = node.value()
            if all(isinstance(c, int) for c in codes) and codes:
                return Ops([Op("$in", codes, node.loc)], node.loc)
        if node.is_map:
            return self.matcher(node)
        self.error(
            node.loc, '`status` takes a code (201), a class ("4xx"), a list of codes or a matcher'
        )
        return None

    def save(self, node: Node) -> list[SaveRule]:
        rules = []
        for key, key_node, value in self.mapping(node, "`save`") or []:
            if not IDENTIFIER.match(key) or key in BUILTINS:
                self.error(
                    key_node.loc,
                    f"`{key}` cannot be saved: names are identifiers "
                    f"(letters, digits, _) and not {', '.join(BUILTINS)}",
                )
                continue
            if value.is_map:
                sub = dict((k, v) for k, _, v in self.mapping(value, "a save rule") or [])
                if set(sub) != {"header"}:
                    self.error(
                        value.loc,
                        "a save rule is a JSON path (`transactionId`, "
                        "`data[0].id`, `.` for the whole body) or `{header: Name}`",
                    )
                    continue
                header = self.string(sub["header"], "`header`")
                if header:
                    rules.append(SaveRule(key, "header", header, value.loc))
                continue
            path = self.string(value, f"save `{key}`")
            if path is None:
                continue
            if path not in (".", "") and not PATH.match(path):
                self.error(value.loc, f"bad JSON path {path!r} (write a.b[0].c)")
                continue
            rules.append(SaveRule(key, "json", path, value.loc))
        return rules

    def retry(self, node: Node) -> Retry | None:
        fields = self.keys(self.mapping(node, "`retry`") or [], ("attempts", "interval"), "`retry`")
        attempts = fields["attempts"].value() if "attempts" in fields else None
        if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
            self.error(node.loc, "`retry` needs `attempts`, a whole number of at least 1")
            return None
        interval = self.duration(fields["interval"], "`interval`") if "interval" in fields else 0.2
        return Retry(attempts, interval or 0.2)
