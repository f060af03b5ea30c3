"""Scenario files -> Scenario objects, or every problem with its file:line:column.

Everything that can be known before a request is sent is checked here: unknown keys (with a
"did you mean"), types, durations, matchers and regular expressions, event names, credential
names, and every `${name}` against what is defined before that step (vars, the matrix, values
saved by earlier steps, built-ins). A file with problems never starts running.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from payorch import bounded
from payorch_cli.scenario.durations import DurationError, parse_duration
from payorch_cli.scenario.expressions import ExprError, Interp, compile_string, compile_value, roots
from payorch_cli.scenario.matchers import (
    Equals,
    Matcher,
    ObjectMatcher,
    Op,
    Ops,
    compile_matcher,
)
from payorch_cli.scenario.model import (
    BUILTINS,
    EVENT_TYPES,
    EventExpectation,
    Expectation,
    HttpCall,
    ReceiverChange,
    Retry,
    SaveRule,
    Scenario,
    Step,
    matrix_cells,
)
from payorch_cli.scenario.source import (
    Loc,
    Node,
    ScenarioError,
    ScenarioFileError,
    compose,
    looks_like_scenario,
)

TOP_KEYS = ("scenario", "description", "tags", "as", "vars", "matrix", "steps")
HTTP_KINDS = (
    "request",
    "create_payment",
    "get_payment",
    "refund",
    "simulate",
    "create_checkout",
    "create_payout",
    "fund_payouts",
    "create_deposit_account",
    "balance",
    "trace",
    "provider",
    "reset_providers",
)
OTHER_KINDS = (
    "advance_clock",
    "expect_event",
    "expect_no_event",
    "receiver",
    "restore_state",
    "save_state",
)
KINDS = HTTP_KINDS + OTHER_KINDS
COMMON = {"name"}
STEP_KEYS: dict[str, set[str]] = {
    **{kind: {"name", "as", "headers", "expect", "save", "retry"} for kind in HTTP_KINDS},
    "advance_clock": {"name", "as"},
    "expect_event": {"name", "as", "save"},
    "expect_no_event": {"name", "as"},
    "receiver": {"name"},
    "restore_state": {"name", "as"},
    "save_state": {"name", "as"},
}
ALL_STEP_KEYS = sorted(set().union(*STEP_KEYS.values()) | set(KINDS))
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PATH = re.compile(r"^(?:[^.\[\]]+|\[\d+\])(?:\.[^.\[\]]+|\[\d+\]|\.\d+)*$")
STATUS_CLASS = re.compile(r"^([1-5])xx$")
# The server's rule for saved-state names (/_sim/state), checked before anything runs.
STATE_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")

SHORT_NAMES = {
    "create_payment": "create a payment",
    "get_payment": "get the payment",
    "refund": "refund",
    "create_checkout": "create a checkout session",
    "create_payout": "send a payout",
    "fund_payouts": "fund the payout balance",
    "create_deposit_account": "get or create a deposit account",
    "balance": "read the balance",
    "trace": "read the cascade trace",
    "receiver": "change the receiver",
    "reset_providers": "put every provider back as the fixtures define it",
}
# The simulated providers (design.md 1.5): what `provider: {set: ...}` and `{incident: ...}`
# take, in the scenario's words (durations like the other steps) -> the control plane's.
PROVIDER_BEHAVIOURS = ("accept", "decline", "outage", "no_instructions", "timeout", "reject")
PROVIDER_SET_KEYS = ("behaviour", "declineRate", "declineReason", "seed", "latency", "callback")
PROVIDER_CALLBACK_KEYS = ("after", "outcome", "mode")
PROVIDER_INCIDENT_KEYS = ("behaviour", "for", "in", "declineReason")
PROVIDER_ACTIONS = ("set", "incident", "end_incidents")

CredentialCheck = Callable[[str], str | None]  # name -> problem, or None if it resolves


def _did_you_mean(key: str, options: Iterable[str]) -> str:
    near = difflib.get_close_matches(key, list(options), 1, 0.6)
    return f"; did you mean `{near[0]}`?" if near else ""


class _Loader:
    def __init__(self, file: str, check_credential: CredentialCheck | None) -> None:
        self.file = file
        self.errors: list[ScenarioError] = []
        self.check_credential = check_credential
        self._mentions_receiver = False  # a ${receiver...} anywhere makes the runner host one

    # -- helpers -----------------------------------------------------------------------------

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
                    f"{_did_you_mean(key, allowed)} (allowed: {', '.join(allowed)})",
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
                f"${{{name}}} is not defined {where}{_did_you_mean(name, options)} "
                f"(defined here: {', '.join(options)})",
            )

    def credential(self, node: Node, value: Any) -> None:
        if isinstance(value, str) and self.check_credential is not None:
            problem = self.check_credential(value)
            if problem:
                self.error(node.loc, problem)

    # -- the file ----------------------------------------------------------------------------

    def scenario(self, root: Node) -> Scenario | None:
        entries = self.mapping(root, "a scenario file")
        if entries is None:
            return None
        top = self.keys(entries, TOP_KEYS, "the scenario")
        if "scenario" not in top:
            self.error(root.loc, "missing `scenario:` (the scenario's name)")
        if "steps" not in top:
            self.error(root.loc, "missing `steps:` (a list of steps)")
        name = self.string(top["scenario"], "`scenario`") if "scenario" in top else None
        scenario = Scenario(name or "?", self.file, root.loc, [])
        if "description" in top:
            scenario.description = self.string(top["description"], "`description`") or ""
        if "tags" in top:
            tags = top["tags"].value() if top["tags"].is_seq else None
            if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
                self.error(top["tags"].loc, "`tags` must be a list of strings")
            else:
                scenario.tags = tags
        defined: set[str] = set()
        if "matrix" in top:
            scenario.matrix = self.matrix(top["matrix"])
            defined |= set().union(set(), *(cell.keys() for cell in scenario.matrix))
        if "vars" in top:
            scenario.vars = self.vars(top["vars"], defined)
            defined |= set(scenario.vars)
        if "as" in top:
            scenario.as_ = self.template(top["as"], "`as`")
            self.names(roots(scenario.as_), top["as"].loc, defined, "in `as`")
            self.credential(top["as"], scenario.as_)
        if "steps" in top:
            node = top["steps"]
            if not node.is_seq or not node.items():
                self.error(node.loc, "`steps` must be a non-empty list of steps")
            else:
                for index, item in enumerate(node.items(), 1):
                    step = self.step(item, index, defined)
                    if step is not None:
                        scenario.steps.append(step)
                        defined |= {rule.name for rule in step.save}
        scenario.uses_receiver = (
            any(s.kind in ("expect_event", "expect_no_event", "receiver") for s in scenario.steps)
            or self._mentions_receiver
        )
        return scenario

    def matrix(self, node: Node) -> list[dict[str, Any]]:
        if node.is_seq:
            cells: list[dict[str, Any]] = []
            keys: list[str] | None = None
            for item in node.items():
                value = item.value() if item.is_map else None
                if not isinstance(value, dict) or not value:
                    self.error(item.loc, "a matrix cell must be a mapping of name: value")
                    continue
                if keys is not None and list(value) != keys:
                    names = ", ".join(keys)
                    self.error(item.loc, f"every matrix cell needs the same names ({names})")
                keys = keys or list(value)
                cells.append(value)
            self._matrix_names(node, cells[0] if cells else {})
            return cells
        entries = self.mapping(node, "`matrix`")
        if entries is None:
            return []
        axes: dict[str, list[Any]] = {}
        for key, _, value in entries:
            items = value.value() if value.is_seq else None
            if not isinstance(items, list) or not items:
                self.error(value.loc, f"matrix `{key}` must be a non-empty list of values")
                continue
            if any(isinstance(i, dict | list) for i in items):
                self.error(
                    value.loc,
                    f"matrix `{key}` values must be scalars (a list of "
                    "mappings under `matrix:` lists whole cells)",
                )
                continue
            axes[key] = items
        self._matrix_names(node, axes)
        return matrix_cells(axes) if axes else []

    def _matrix_names(self, node: Node, names: Iterable[str]) -> None:
        for name in names:
            if not IDENTIFIER.match(name) or name in BUILTINS:
                self.error(
                    node.loc,
                    f"matrix name `{name}` must be an identifier, not a "
                    f"built-in ({', '.join(BUILTINS)})",
                )

    def vars(self, node: Node, defined: set[str]) -> dict[str, Any]:
        entries = self.mapping(node, "`vars`")
        out: dict[str, Any] = {}
        for key, key_node, value in entries or []:
            if not IDENTIFIER.match(key) or key in BUILTINS:
                self.error(key_node.loc, f"var `{key}` must be an identifier, not a built-in")
                continue
            compiled = self.compiled(value)
            self.names(roots(compiled), value.loc, defined | set(out), f"in var `{key}`")
            out[key] = compiled
        return out

    # -- steps -------------------------------------------------------------------------------

    def step(self, node: Node, index: int, defined: set[str]) -> Step | None:
        entries = self.mapping(node, f"step {index}")
        if entries is None:
            return None
        present = {key: (key_node, value) for key, key_node, value in entries}
        kinds = [k for k in present if k in KINDS]
        if len(kinds) != 1:
            unknown = [k for k in present if k not in ALL_STEP_KEYS]
            for key in unknown:
                self.error(
                    present[key][0].loc,
                    f"unknown key `{key}` in step {index}{_did_you_mean(key, ALL_STEP_KEYS)}",
                )
            if not unknown:
                what = "no action" if not kinds else f"{len(kinds)} actions ({', '.join(kinds)})"
                self.error(
                    node.loc,
                    f"step {index} has {what}; a step does exactly one of: {', '.join(KINDS)}",
                )
            return None
        kind = kinds[0]
        fields = self.keys(entries, STEP_KEYS[kind] | {kind}, f"a `{kind}` step")
        step = Step(index, "", kind, node.loc)
        if "name" in fields:
            step.name = self.string(fields["name"], "`name`") or ""
        if "as" in fields:
            step.as_ = self.template(fields["as"], "`as`")
            self.names(roots(step.as_), fields["as"].loc, defined, f"in step {index}")
            self.credential(fields["as"], step.as_)
        action = fields[kind]
        where = f"in step {index}"
        if kind in HTTP_KINDS:
            step.http = self.http(kind, action)
            if step.http is not None:
                self._check_call(step.http, action.loc, defined, where)
            if "headers" in fields and step.http is not None:
                extra = self.headers(fields["headers"])
                step.http.headers.update(extra)
                self.names(roots(extra), fields["headers"].loc, defined, where)
            if "expect" in fields:
                step.expect = self.expect(fields["expect"])
                if step.expect is not None:
                    used = set().union(set(), *(m.names() for m in _matchers(step.expect)))
                    self.names(used, fields["expect"].loc, defined, where)
            if "retry" in fields:
                step.retry = self.retry(fields["retry"])
        elif kind == "advance_clock":
            step.seconds = self.duration(action, "`advance_clock`")
        elif kind in ("expect_event", "expect_no_event"):
            step.event = self.event(action, absent=kind == "expect_no_event")
            if step.event is not None:
                used = set().union(set(), *(m.names() for m in _event_matchers(step.event)))
                self.names(used, action.loc, defined, where)
        elif kind in ("restore_state", "save_state"):
            step.state = self.state_name(action, f"`{kind}`")
        elif kind == "receiver":
            step.receiver = self.receiver(action)
            if step.receiver is not None:
                used = roots(step.receiver.status) | roots(step.receiver.secret)
                self.names(used, action.loc, defined, where)
        if "save" in fields:
            step.save = self.save(fields["save"])
        step.name = step.name or _default_name(step)
        if "receiver" in _step_roots(step):
            self._mentions_receiver = True
        return step

    def _check_call(self, call: HttpCall, loc: Loc, defined: set[str], where: str) -> None:
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

    def http(self, kind: str, node: Node) -> HttpCall | None:
        if kind == "request":
            return self.request(node)
        if kind == "balance":
            if not (node.is_null or (node.is_map and not node.raw.value)):
                self.error(node.loc, "`balance` takes no arguments (write `balance: {}`)")
            return HttpCall("GET", "/me/balance")
        if kind == "get_payment":
            path = self._id_path(node, "/payments/{}", "`get_payment` takes a transaction id")
            return HttpCall("GET", path) if path is not None else None
        posts = {
            "create_payment": "/payments",
            "create_checkout": "/checkout/sessions",
            "create_payout": "/me/payout/send",
            "create_deposit_account": "/me/deposit-accounts",
        }
        if kind in posts:
            if not node.is_map:
                self.error(node.loc, f"`{kind}` takes the request body, a mapping")
                return None
            return HttpCall("POST", posts[kind], body=self.compiled(node), has_body=True)
        if kind == "fund_payouts":
            entries = self.mapping(node, "`fund_payouts`")
            if entries is None:
                return None
            fields = self.keys(entries, ("currency", "amount"), "`fund_payouts`")
            for required in ("currency", "amount"):
                if required not in fields:
                    self.error(node.loc, f"`fund_payouts` needs `{required}`")
            return HttpCall(
                "POST", "/me/payout/fund-sandbox", body=self.compiled(node), has_body=True
            )
        if kind == "refund":
            entries = self.mapping(node, "`refund`")
            if entries is None:
                return None
            fields = self.keys(entries, ("payment", "amount", "reason"), "`refund`")
            if "payment" not in fields:
                self.error(node.loc, "`refund` needs `payment` (a transaction id)")
                return None
            path = self._id_path(fields["payment"], "/payments/{}/refund", "`payment`")
            body = {k: self.compiled(v) for k, v in fields.items() if k != "payment"}
            return HttpCall("POST", path, body=body, has_body=True) if path else None
        if kind == "simulate":
            return self.simulate(node)
        if kind == "trace":
            return self.trace(node)
        if kind == "provider":
            return self.provider(node)
        if kind == "reset_providers":
            if not (node.is_null or (node.is_map and not node.raw.value)):
                self.error(
                    node.loc, "`reset_providers` takes no arguments (write `reset_providers: {}`)"
                )
            return HttpCall("POST", "/_sim/providers/reset", body=None, has_body=False)
        raise AssertionError(kind)

    # -- the simulated providers -------------------------------------------------------------

    def provider(self, node: Node) -> HttpCall | None:
        """`provider: {id}` reads it, `{id, set: {...}}` changes it (PATCH), `{id, incident:
        {behaviour, for, in?, declineReason?}}` schedules a window of another behaviour, `{id,
        end_incidents: true}` ends all its incidents now (`end_incidents: inc_…`: that one)."""
        entries = self.mapping(node, "`provider`")
        if entries is None:
            return None
        fields = self.keys(entries, ("id", *PROVIDER_ACTIONS), "`provider`")
        if "id" not in fields:
            self.error(
                node.loc, "`provider` needs `id` (a provider id, as `payorch providers` lists)"
            )
            return None
        actions = [key for key in PROVIDER_ACTIONS if key in fields]
        if len(actions) > 1:
            self.error(
                node.loc,
                f"`provider` takes one of `set`, `incident` or `end_incidents`, not "
                f"`{actions[0]}` and `{actions[1]}` (write two steps)",
            )
            return None
        if "end_incidents" in fields:
            return self.end_incidents(fields["id"], fields["end_incidents"])
        path = self._id_path(fields["id"], "/_sim/providers/{}", "`id`")
        if path is None:
            return None
        if "set" in fields:
            body = self.provider_settings(fields["set"])
            return HttpCall("PATCH", path, body=body, has_body=True) if body is not None else None
        if "incident" in fields:
            body = self.provider_incident(fields["incident"])
            if body is None:
                return None
            incidents = self._id_path(fields["id"], "/_sim/providers/{}/incidents", "`id`")
            return HttpCall("POST", incidents, body=body, has_body=True)
        return HttpCall("GET", path)

    def end_incidents(self, provider: Node, node: Node) -> HttpCall | None:
        """`end_incidents: true`: DELETE every incident of the provider; `end_incidents: inc_…`
        (or a saved `${…}`): that one."""
        if node.is_scalar and node.value() is True:
            path = self._id_path(provider, "/_sim/providers/{}/incidents", "`id`")
            return None if path is None else HttpCall("DELETE", path)
        if node.is_scalar and isinstance(node.value(), str):
            provider_id = self.string(provider, "`id`")
            incident_id = self.string(node, "`end_incidents`")
            if provider_id is None or incident_id is None:
                return None
            try:
                path = compile_string(f"/_sim/providers/{provider_id}/incidents/{incident_id}")
            except ExprError as exc:
                self.error(node.loc, str(exc))
                return None
            return HttpCall("DELETE", path)
        self.error(
            node.loc,
            "`end_incidents` takes `true` (every incident of the provider) or one incident's "
            "id (`inc_…`, or a saved `${…}`)",
        )
        return None

    def behaviour(self, node: Node) -> Any:
        value = self.compiled(node)
        if isinstance(value, str) and value not in PROVIDER_BEHAVIOURS:
            self.error(
                node.loc,
                f"unknown behaviour `{value}`{_did_you_mean(value, PROVIDER_BEHAVIOURS)} "
                f"(behaviours: {', '.join(PROVIDER_BEHAVIOURS)})",
            )
        return value

    def provider_settings(self, node: Node) -> dict[str, Any] | None:
        entries = self.mapping(node, "`set`")
        if entries is None:
            return None
        fields = self.keys(entries, PROVIDER_SET_KEYS, "`provider.set`")
        if not entries:
            self.error(node.loc, f"`set` needs one of: {', '.join(PROVIDER_SET_KEYS)}")
        body: dict[str, Any] = {}
        for key, value in fields.items():
            if key == "behaviour":
                body["behaviour"] = self.behaviour(value)
            elif key == "latency":
                body["latencySeconds"] = self.duration_or(value, "`latency`", zero=True)
            elif key == "callback":
                body["callback"] = self.provider_callback(value)
            else:
                body[key] = self.compiled(value)
        return body

    def provider_callback(self, node: Node) -> dict[str, Any]:
        fields = self.keys(
            self.mapping(node, "`callback`") or [], PROVIDER_CALLBACK_KEYS, "`callback`"
        )
        out: dict[str, Any] = {}
        if "after" in fields:  # null: the provider never calls back; only the poll settles
            out["afterSeconds"] = self.duration_or(fields["after"], "`callback.after`", zero=True)
        if "outcome" in fields:
            out["outcome"] = self.compiled(fields["outcome"])
        if "mode" in fields:
            out["mode"] = self.compiled(fields["mode"])
        return out

    def duration_or(self, node: Node, what: str, *, zero: bool = False) -> float | None:
        """A duration; `null` (and `0` where `zero`) pass through as no delay / never."""
        if node.is_null:
            return None
        if zero and node.is_scalar and node.value() in (0, "0", "0s"):
            return 0.0
        return self.duration(node, what)

    def provider_incident(self, node: Node) -> dict[str, Any] | None:
        entries = self.mapping(node, "`incident`")
        if entries is None:
            return None
        fields = self.keys(entries, PROVIDER_INCIDENT_KEYS, "`provider.incident`")
        for required in ("behaviour", "for"):
            if required not in fields:
                self.error(node.loc, f"`incident` needs `{required}`")
        if "behaviour" not in fields or "for" not in fields:
            return None
        body: dict[str, Any] = {
            "behaviour": self.behaviour(fields["behaviour"]),
            "durationSeconds": self.duration(fields["for"], "`for`"),
        }
        if "in" in fields:
            body["startsInSeconds"] = self.duration_or(fields["in"], "`in`", zero=True)
        if "declineReason" in fields:
            body["declineReason"] = self.compiled(fields["declineReason"])
        return body

    def trace(self, node: Node) -> HttpCall | None:
        """`trace: {payment: TXN-…}` or `trace: {payout: po_…}`: GET its cascade trace, checked
        with `expect` like any answer (`entries: {$contains: [...]}`)."""
        entries = self.mapping(node, "`trace`")
        if entries is None:
            return None
        fields = self.keys(entries, ("payment", "payout"), "`trace`")
        if len(fields) != 1:
            self.error(node.loc, "`trace` takes one of `payment: TXN-…` or `payout: po_…`")
            return None
        target, value = next(iter(fields.items()))
        path = self._id_path(value, f"/_sim/{target}s/{{}}/trace", f"`{target}`")
        return HttpCall("GET", path) if path is not None else None

    def _id_path(self, node: Node, pattern: str, what: str) -> Any:
        text = self.string(node, what)
        if text is None:
            return None
        try:
            return compile_string(pattern.format(text))
        except ExprError as exc:
            self.error(node.loc, str(exc))
            return None

    def simulate(self, node: Node) -> HttpCall | None:
        entries = self.mapping(node, "`simulate`")
        if entries is None:
            return None
        allowed = ("payment", "payout", "deposit", "action", "amount", "payerName", "payerEmail")
        fields = self.keys(entries, allowed, "`simulate`")
        targets = [k for k in ("payment", "payout", "deposit") if k in fields]
        if len(targets) != 1:
            self.error(
                node.loc,
                "`simulate` takes one of `payment: TXN-…`, `payout: po_…` "
                "(each with `action`) or `deposit: CLABE` (with `amount`)",
            )
            return None
        target = targets[0]
        if target == "deposit":
            if "amount" not in fields:
                self.error(node.loc, "`simulate: {deposit: …}` needs `amount`")
            if "action" in fields:
                self.error(fields["action"].loc, "a deposit has no `action`")
            body: dict[str, Any] = {"clabe": self.compiled(fields["deposit"])}
            for key in ("amount", "payerName", "payerEmail"):
                if key in fields:
                    body[key] = self.compiled(fields[key])
            return HttpCall("POST", "/_sim/deposits", body=body, has_body=True)
        if "action" not in fields:
            self.error(node.loc, f"`simulate: {{{target}: …}}` needs `action`")
            return None
        for key in ("amount", "payerName", "payerEmail"):
            if key in fields:
                self.error(fields[key].loc, f"`{key}` goes with `deposit`")
        pattern = "/payments/{}/simulate" if target == "payment" else "/me/payout/send/{}/simulate"
        path = self._id_path(fields[target], pattern, f"`{target}`")
        body = {"action": self.compiled(fields["action"])}
        return HttpCall("POST", path, body=body, has_body=True) if path else None

    def request(self, node: Node) -> HttpCall | None:
        entries = self.mapping(node, "`request`")
        if entries is None:
            return None
        allowed = ("method", "path", "url", "headers", "query", "body", "raw")
        fields = self.keys(entries, allowed, "`request`")
        method = self.string(fields["method"], "`method`") if "method" in fields else None
        if "method" not in fields:
            self.error(node.loc, "`request` needs `method`")
        elif method is not None and method.upper() not in METHODS:
            self.error(fields["method"].loc, f"unknown method `{method}` ({', '.join(METHODS)})")
        where = [k for k in ("path", "url") if k in fields]
        if len(where) != 1:
            self.error(
                node.loc,
                "`request` needs `path` (relative to /api/v1, or /_sim/…) or "
                "`url` (absolute), not both",
            )
            return None
        path = self.template(fields[where[0]], f"`{where[0]}`")
        if where[0] == "path" and isinstance(path, str) and not path.startswith("/"):
            self.error(fields["path"].loc, f"`path` must start with / (got {path!r})")
        if "body" in fields and "raw" in fields:
            self.error(node.loc, "`request` takes `body` (JSON) or `raw` (text), not both")
        call = HttpCall((method or "GET").upper(), path)
        if "headers" in fields:
            call.headers = self.headers(fields["headers"])
        if "query" in fields:
            entries_q = self.mapping(fields["query"], "`query`") or []
            call.query = {k: self.compiled(v) for k, _, v in entries_q}
        if "body" in fields:
            call.body, call.has_body = self.compiled(fields["body"]), True
        if "raw" in fields:
            call.raw = self.template(fields["raw"], "`raw`")
        return call

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

    def event(self, node: Node, absent: bool) -> EventExpectation | None:
        kind = "expect_no_event" if absent else "expect_event"
        if node.is_scalar:  # `expect_event: payment.completed`
            name = self.string(node, f"`{kind}`")
            fields: dict[str, Node] = {}
        else:
            fields = self.keys(
                self.mapping(node, f"`{kind}`") or [],
                ("type", "match", "headers", "within"),
                f"`{kind}`",
            )
            if "type" not in fields:
                self.error(node.loc, f"`{kind}` needs `type` (an event name)")
                return None
            name = self.string(fields["type"], "`type`")
        if name is None:
            return None
        if name not in EVENT_TYPES:
            loc = fields["type"].loc if "type" in fields else node.loc
            self.error(
                loc,
                f"unknown event type `{name}`{_did_you_mean(name, EVENT_TYPES)} "
                f"(events: {', '.join(EVENT_TYPES)})",
            )
        out = EventExpectation(name, node.loc, absent=absent, within=1.0 if absent else 5.0)
        if "match" in fields:
            out.match = self.matcher(fields["match"])
        if "headers" in fields:
            for key, _, value in self.mapping(fields["headers"], "`headers`") or []:
                matcher = self.matcher(value)
                if matcher is not None:
                    out.headers[key] = matcher
        if "within" in fields:
            out.within = self.duration(fields["within"], "`within`") or out.within
        return out

    def receiver(self, node: Node) -> ReceiverChange | None:
        fields = self.keys(
            self.mapping(node, "`receiver`") or [], ("status", "secret"), "`receiver`"
        )
        if not fields:
            self.error(
                node.loc,
                "`receiver` takes `status` (what it answers from now on) "
                "and/or `secret` (what it verifies signatures with)",
            )
            return None
        change = ReceiverChange()
        if "status" in fields:
            change.status = self.compiled(fields["status"])
            if not isinstance(change.status, int | Interp):
                self.error(fields["status"].loc, "`status` must be an HTTP status code")
        if "secret" in fields:
            change.secret = self.template(fields["secret"], "`secret`")
        return change


def _matchers(expect: Expectation) -> list[Matcher]:
    found = [expect.status, expect.error, expect.json, *expect.headers.values()]
    return [m for m in found if m is not None]


def _event_matchers(event: EventExpectation) -> list[Matcher]:
    return [m for m in (event.match, *event.headers.values()) if m is not None]


def _step_roots(step: Step) -> set[str]:
    used = roots(step.as_)
    if step.http:
        call = step.http
        used |= roots(call.path) | roots(call.headers) | roots(call.query) | roots(call.body)
    if step.expect:
        used |= set().union(set(), *(m.names() for m in _matchers(step.expect)))
    if step.event:
        used |= set().union(set(), *(m.names() for m in _event_matchers(step.event)))
    return used


def _default_name(step: Step) -> str:
    from payorch_cli.scenario.durations import format_duration

    if step.kind == "restore_state":
        return f"restore the saved state {step.state}"
    if step.kind == "save_state":
        return f"save the state as {step.state}"
    if step.kind == "advance_clock" and step.seconds:
        return f"advance the clock {format_duration(step.seconds)}"
    if step.event is not None:
        verb = "no" if step.event.absent else "expect"
        return f"{verb} {step.event.type}"
    if step.kind == "simulate" and step.http is not None and isinstance(step.http.body, dict):
        action = step.http.body.get("action")
        target = (
            "deposit"
            if "clabe" in step.http.body
            else ("payout" if "/payout/" in str(step.http.path) else "payment")
        )
        return f"simulate {target} {action}" if isinstance(action, str) else f"simulate {target}"
    if step.kind == "provider" and step.http is not None:
        return _provider_step_name(step.http)
    if step.kind in SHORT_NAMES:
        return SHORT_NAMES[step.kind]
    if step.http is not None:
        path = step.http.path
        shown = (
            path
            if isinstance(path, str)
            else "".join(p if isinstance(p, str) else "${" + p.source + "}" for p in path.parts)
        )
        return f"{step.http.method} {shown}"
    return step.kind


def _provider_step_name(call: HttpCall) -> str:
    """`provider prv_stp_mx: set behaviour=outage`, `provider prv_stp_mx: outage for 10m`."""
    from payorch_cli.scenario.durations import format_duration

    path = call.path
    shown = (
        path
        if isinstance(path, str)
        else "".join(p if isinstance(p, str) else "${" + p.source + "}" for p in path.parts)
    )
    provider_id, _, incident_id = (
        shown.removeprefix("/_sim/providers/").removesuffix("/incidents").partition("/incidents/")
    )
    body = call.body if isinstance(call.body, dict) else {}
    if call.method == "GET":
        return f"read provider {provider_id}"
    if call.method == "DELETE":
        return f"provider {provider_id}: end " + (
            f"incident {incident_id}" if incident_id else "its incidents"
        )
    if call.method == "PATCH":
        changes = ", ".join(
            f"{key}={value}" for key, value in body.items() if not isinstance(value, dict | list)
        )
        if isinstance(body.get("callback"), dict):
            callback = ", ".join(f"{k}={v}" for k, v in body["callback"].items())
            changes = ", ".join(filter(None, [changes, f"callback({callback})"]))
        return f"provider {provider_id}: set {changes}"
    seconds = body.get("durationSeconds")
    window = f" for {format_duration(seconds)}" if isinstance(seconds, int | float) else ""
    starts = body.get("startsInSeconds")
    if isinstance(starts, int | float) and starts > 0:
        window += f" in {format_duration(starts)}"
    return f"provider {provider_id}: {body.get('behaviour')}{window}"


def load_text(text: str, file: str, check_credential: CredentialCheck | None = None) -> Scenario:
    """Parse and check one scenario file's text. Raises ScenarioFileError."""
    try:
        root = compose(text, file)
    except ScenarioError as exc:
        raise ScenarioFileError([exc]) from None
    loader = _Loader(file, check_credential)
    try:
        scenario = loader.scenario(root)
    except ScenarioError as exc:
        loader.errors.append(exc)
        scenario = None
    if loader.errors or scenario is None:
        raise ScenarioFileError(loader.errors)
    return scenario


def load_file(
    path: Path, check_credential: CredentialCheck | None = None, display: str | None = None
) -> Scenario:
    name = display or str(path)
    try:
        text = bounded.read_text(path)
    except bounded.TooLargeError as exc:
        raise ScenarioFileError([ScenarioError(Loc(name, 1, 1), str(exc))]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioFileError([ScenarioError(Loc(name, 1, 1), f"cannot read: {exc}")]) from None
    return load_text(text, name, check_credential)


NOT_A_SCENARIO = "no top-level `scenario:` key, so not a scenario file"


def discover(
    paths: Iterable[Path],
) -> tuple[list[Path], list[ScenarioError], list[tuple[Path, str]]]:
    """Scenario files under `paths`: a file named explicitly is taken as is; in a directory,
    every *.yaml / *.yml with a top-level `scenario:` key. The other YAML files of a directory
    are left alone and listed with the reason (hidden files and directories are not looked
    at)."""
    files: list[Path] = []
    errors: list[ScenarioError] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for candidate in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in candidate.relative_to(path).parts)
                if hidden or candidate.suffix not in (".yaml", ".yml") or not candidate.is_file():
                    continue
                try:
                    text = bounded.read_text(candidate)
                except bounded.TooLargeError as exc:
                    skipped.append((candidate, str(exc)))
                    continue
                except UnicodeDecodeError:
                    skipped.append((candidate, "not UTF-8 text"))
                    continue
                except OSError as exc:
                    skipped.append((candidate, f"cannot read: {exc.strerror or exc}"))
                    continue
                if looks_like_scenario(text):
                    files.append(candidate)
                else:
                    skipped.append((candidate, NOT_A_SCENARIO))
        else:
            errors.append(ScenarioError(Loc(str(path), 1, 1), "no such file or directory"))
    return files, errors, skipped
