"""The steps that are one HTTP call: `request` (any call) and the API's shortcuts
(`create_payment`, `get_payment`, `refund`, `simulate`...). Each kind reads its action into an
`HttpCall`; they share `headers`, `expect`, `save` and `retry`, and how they run: send (again
while `retry` allows), check the answer, save from it. Without `status` or `error` in `expect`,
the answer must be 2xx, so a step never fails silently.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from payorch_cli.client import POLL_HEADER
from payorch_cli.scenario.expressions import render, roots
from payorch_cli.scenario.http import Exchange
from payorch_cli.scenario.matchers import MISSING, Mismatch
from payorch_cli.scenario.model import HttpCall, Step
from payorch_cli.scenario.results import Failure, StepFailed, StepResult
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.base import StepKind
from payorch_cli.scenario.steps.reading import (
    HEADERS_SCHEMA,
    StepChecker,
    expect_matchers,
    matcher_names,
)
from payorch_cli.scenario.steps.running import StepRun, diff_lines, error_summary, save_values

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
AN_ID = {"type": "string", "description": 'An id, usually "${saved}".'}
A_BODY = {"type": "object", "description": "The request body."}
NO_ARGUMENTS = {"type": ["object", "null"], "maxProperties": 0}


class HttpStep(StepKind):
    """A step that is one HTTP call."""

    keys = ("name", "as", "headers", "expect", "save", "retry")
    short_name: ClassVar[str | None] = None  # its default name; else the method and path

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        """The call the action (`node`) says; None (with the problem told) if it cannot."""
        raise NotImplementedError

    def parse(
        self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
    ) -> None:
        action = fields[self.name]
        where = f"in step {step.index}"
        step.http = self.call(checker, action)
        if step.http is not None:
            checker.check_call(step.http, action.loc, defined, where)
        if "headers" in fields and step.http is not None:
            extra = checker.headers(fields["headers"])
            step.http.headers.update(extra)
            checker.names(roots(extra), fields["headers"].loc, defined, where)
        if "expect" in fields:
            step.expect = checker.expect(fields["expect"])
            if step.expect is not None:
                used = matcher_names(expect_matchers(step.expect))
                checker.names(used, fields["expect"].loc, defined, where)
        if "retry" in fields:
            step.retry = checker.retry(fields["retry"])

    def default_name(self, step: Step) -> str:
        if self.short_name is not None:
            return self.short_name
        if step.http is None:
            return self.name
        return f"{step.http.method} {shown_path(step.http.path)}"

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        call = step.http
        assert call is not None and result.credential is not None
        path = str(render(call.path, run.scope))
        headers = {k: str(render(v, run.scope)) for k, v in call.headers.items()}
        query = render(call.query, run.scope)
        body = render(call.body, run.scope) if call.has_body else None
        raw = render(call.raw, run.scope) if call.raw is not None else None
        attempts = step.retry.attempts if step.retry else 1
        for attempt in range(1, attempts + 1):
            exchange = run.send(
                call.method,
                path,
                result.credential,
                body=body,
                headers=headers if attempt == 1 else {**headers, POLL_HEADER: str(attempt)},
                query=query,
                raw=raw,
                has_body=call.has_body,
            )
            result.exchange = exchange
            failure = check_answer(step, exchange, run.scope)
            if failure is None:
                break
            if attempt == attempts:
                if attempts > 1:
                    failure.notes.append(f"still failing after {attempts} attempts")
                raise StepFailed(failure)
            assert step.retry is not None
            time.sleep(step.retry.interval)
        result.note = f"{exchange.status} in {exchange.duration_ms:.0f} ms"
        save_values(run.scope, step.save, exchange.json, exchange.headers, "the response")


def shown_path(path: Any) -> str:
    """A compiled path as the file wrote it (`/payments/${tx}`)."""
    if isinstance(path, str):
        return path
    return "".join(p if isinstance(p, str) else "${" + p.source + "}" for p in path.parts)


def check_answer(step: Step, exchange: Exchange, scope: dict[str, Any]) -> Failure | None:
    """What is wrong with the answer against the step's `expect`, or None."""
    expect = step.expect
    body = exchange.json if exchange.is_json else exchange.text
    mismatches: list[Mismatch] = []
    diff: list[str] = []
    defaulted = expect is None or (expect.status is None and expect.error is None)
    if defaulted and not 200 <= exchange.status < 300:
        mismatches.append(
            Mismatch("status", f"expected 2xx, got {exchange.status}{error_summary(body)}")
        )
    if expect is not None:
        if expect.status is not None:
            found = expect.status.check(exchange.status, "status", scope)
            mismatches += [Mismatch(m.path, m.message + error_summary(body)) for m in found]
        if expect.error is not None:
            error = body.get("error", MISSING) if isinstance(body, dict) else MISSING
            if expect.status is None and exchange.status < 400:
                mismatches.append(Mismatch("status", f"expected an error, got {exchange.status}"))
            found = expect.error.check(error, "error", scope)
            mismatches += found
            if found:
                diff += diff_lines(expect.error, error, scope)
        for name, matcher in expect.headers.items():
            value = exchange.headers.get(name.lower(), MISSING)
            mismatches += matcher.check(value, f"headers.{name}", scope)
        if expect.json is not None:
            if not exchange.is_json:
                mismatches.append(
                    Mismatch(
                        "json",
                        f"the answer is not JSON ({exchange.headers.get('content-type')})",
                    )
                )
            else:
                found = expect.json.check(body, "json", scope)
                mismatches += found
                if found:
                    diff += diff_lines(expect.json, body, scope)
    if not mismatches:
        return None
    first = mismatches[0]
    more = f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
    return Failure(f"{first.path}: {first.message}{more}", mismatches, diff)


# ---------------------------------------------------------------------------- the kinds


class Request(HttpStep):
    name = "request"
    description = "Any HTTP call."
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "required": ["method"],
        "additionalProperties": False,
        "properties": {
            "method": {"enum": list(METHODS)},
            "path": {
                "type": "string",
                "pattern": "^/",
                "description": "Relative to /api/v1, or /_sim/...",
            },
            "url": {
                "type": "string",
                "description": 'An absolute URL (e.g. "${base_url}/c/${tx}").',
            },
            "headers": HEADERS_SCHEMA,
            "query": {"type": "object"},
            "body": {},
            "raw": {"type": "string"},
        },
    }

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        entries = checker.mapping(node, "`request`")
        if entries is None:
            return None
        allowed = ("method", "path", "url", "headers", "query", "body", "raw")
        fields = checker.keys(entries, allowed, "`request`")
        method = checker.string(fields["method"], "`method`") if "method" in fields else None
        if "method" not in fields:
            checker.error(node.loc, "`request` needs `method`")
        elif method is not None and method.upper() not in METHODS:
            checker.error(fields["method"].loc, f"unknown method `{method}` ({', '.join(METHODS)})")
        where = [k for k in ("path", "url") if k in fields]
        if len(where) != 1:
            checker.error(
                node.loc,
                "`request` needs `path` (relative to /api/v1, or /_sim/…) or "
                "`url` (absolute), not both",
            )
            return None
        path = checker.template(fields[where[0]], f"`{where[0]}`")
        if where[0] == "path" and isinstance(path, str) and not path.startswith("/"):
            checker.error(fields["path"].loc, f"`path` must start with / (got {path!r})")
        if "body" in fields and "raw" in fields:
            checker.error(node.loc, "`request` takes `body` (JSON) or `raw` (text), not both")
        call = HttpCall((method or "GET").upper(), path)
        if "headers" in fields:
            call.headers = checker.headers(fields["headers"])
        if "query" in fields:
            entries_q = checker.mapping(fields["query"], "`query`") or []
            call.query = {k: checker.compiled(v) for k, _, v in entries_q}
        if "body" in fields:
            call.body, call.has_body = checker.compiled(fields["body"]), True
        if "raw" in fields:
            call.raw = checker.template(fields["raw"], "`raw`")
        return call


class PostBody(HttpStep):
    """A POST whose body is the action, as the API takes it."""

    path: ClassVar[str]
    schema: ClassVar[dict[str, Any]] = A_BODY

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        if not node.is_map:
            checker.error(node.loc, f"`{self.name}` takes the request body, a mapping")
            return None
        return HttpCall("POST", self.path, body=checker.compiled(node), has_body=True)


class CreatePayment(PostBody):
    name = "create_payment"
    path = "/payments"
    description = "POST /payments"
    short_name = "create a payment"


class GetPayment(HttpStep):
    name = "get_payment"
    description = "GET /payments/{id}"
    schema: ClassVar[dict[str, Any]] = AN_ID
    short_name = "get the payment"

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        path = checker.id_path(node, "/payments/{}", "`get_payment` takes a transaction id")
        return HttpCall("GET", path) if path is not None else None


class Refund(HttpStep):
    name = "refund"
    description = "POST /payments/{id}/refund"
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "required": ["payment"],
        "additionalProperties": False,
        "properties": {
            "payment": AN_ID,
            "amount": {"type": ["number", "string"]},
            "reason": {"type": "string"},
        },
    }
    short_name = "refund"

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        entries = checker.mapping(node, "`refund`")
        if entries is None:
            return None
        fields = checker.keys(entries, ("payment", "amount", "reason"), "`refund`")
        if "payment" not in fields:
            checker.error(node.loc, "`refund` needs `payment` (a transaction id)")
            return None
        path = checker.id_path(fields["payment"], "/payments/{}/refund", "`payment`")
        body = {k: checker.compiled(v) for k, v in fields.items() if k != "payment"}
        return HttpCall("POST", path, body=body, has_body=True) if path else None


class Simulate(HttpStep):
    name = "simulate"
    description = "POST /payments/{id}/simulate, /me/payout/send/{id}/simulate or /_sim/deposits"
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "payment": AN_ID,
            "payout": AN_ID,
            "deposit": {"type": "string", "description": "A CLABE."},
            "action": {"type": "string"},
            "amount": {"type": ["number", "string"]},
            "payerName": {"type": "string"},
            "payerEmail": {"type": "string"},
        },
        "oneOf": [
            {"required": ["payment", "action"]},
            {"required": ["payout", "action"]},
            {"required": ["deposit", "amount"]},
        ],
    }

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        entries = checker.mapping(node, "`simulate`")
        if entries is None:
            return None
        allowed = ("payment", "payout", "deposit", "action", "amount", "payerName", "payerEmail")
        fields = checker.keys(entries, allowed, "`simulate`")
        targets = [k for k in ("payment", "payout", "deposit") if k in fields]
        if len(targets) != 1:
            checker.error(
                node.loc,
                "`simulate` takes one of `payment: TXN-…`, `payout: po_…` "
                "(each with `action`) or `deposit: CLABE` (with `amount`)",
            )
            return None
        target = targets[0]
        if target == "deposit":
            if "amount" not in fields:
                checker.error(node.loc, "`simulate: {deposit: …}` needs `amount`")
            if "action" in fields:
                checker.error(fields["action"].loc, "a deposit has no `action`")
            body: dict[str, Any] = {"clabe": checker.compiled(fields["deposit"])}
            for key in ("amount", "payerName", "payerEmail"):
                if key in fields:
                    body[key] = checker.compiled(fields[key])
            return HttpCall("POST", "/_sim/deposits", body=body, has_body=True)
        if "action" not in fields:
            checker.error(node.loc, f"`simulate: {{{target}: …}}` needs `action`")
            return None
        for key in ("amount", "payerName", "payerEmail"):
            if key in fields:
                checker.error(fields[key].loc, f"`{key}` goes with `deposit`")
        pattern = "/payments/{}/simulate" if target == "payment" else "/me/payout/send/{}/simulate"
        path = checker.id_path(fields[target], pattern, f"`{target}`")
        body = {"action": checker.compiled(fields["action"])}
        return HttpCall("POST", path, body=body, has_body=True) if path else None

    def default_name(self, step: Step) -> str:
        if step.http is None or not isinstance(step.http.body, dict):
            return super().default_name(step)
        action = step.http.body.get("action")
        target = (
            "deposit"
            if "clabe" in step.http.body
            else ("payout" if "/payout/" in str(step.http.path) else "payment")
        )
        return f"simulate {target} {action}" if isinstance(action, str) else f"simulate {target}"


class CreateCheckout(PostBody):
    name = "create_checkout"
    path = "/checkout/sessions"
    description = "POST /checkout/sessions"
    short_name = "create a checkout session"


class CreatePayout(PostBody):
    name = "create_payout"
    path = "/me/payout/send"
    description = "POST /me/payout/send"
    short_name = "send a payout"


class FundPayouts(HttpStep):
    name = "fund_payouts"
    description = "POST /me/payout/fund-sandbox"
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "required": ["currency", "amount"],
        "additionalProperties": False,
        "properties": {"currency": {"type": "string"}, "amount": {"type": ["number", "string"]}},
    }
    short_name = "fund the payout balance"

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        entries = checker.mapping(node, "`fund_payouts`")
        if entries is None:
            return None
        fields = checker.keys(entries, ("currency", "amount"), "`fund_payouts`")
        for required in ("currency", "amount"):
            if required not in fields:
                checker.error(node.loc, f"`fund_payouts` needs `{required}`")
        return HttpCall(
            "POST", "/me/payout/fund-sandbox", body=checker.compiled(node), has_body=True
        )


class CreateDepositAccount(PostBody):
    name = "create_deposit_account"
    path = "/me/deposit-accounts"
    description = "POST /me/deposit-accounts"
    short_name = "get or create a deposit account"


class Balance(HttpStep):
    name = "balance"
    description = "GET /me/balance"
    schema: ClassVar[dict[str, Any]] = NO_ARGUMENTS
    short_name = "read the balance"

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        if not (node.is_null or (node.is_map and not node.raw.value)):
            checker.error(node.loc, "`balance` takes no arguments (write `balance: {}`)")
        return HttpCall("GET", "/me/balance")


class Trace(HttpStep):
    name = "trace"
    description = (
        "GET /_sim/payments/{id}/trace or /_sim/payouts/{id}/trace: the internal cascade trace, "
        "{id, subject, environment, truncated, entries: [{at, kind, ...}]}"
    )
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"payment": AN_ID, "payout": AN_ID},
        "oneOf": [{"required": ["payment"]}, {"required": ["payout"]}],
    }
    short_name = "read the cascade trace"

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        """`trace: {payment: TXN-…}` or `trace: {payout: po_…}`: GET its cascade trace, checked
        with `expect` like any answer (`entries: {$contains: [...]}`)."""
        entries = checker.mapping(node, "`trace`")
        if entries is None:
            return None
        fields = checker.keys(entries, ("payment", "payout"), "`trace`")
        if len(fields) != 1:
            checker.error(node.loc, "`trace` takes one of `payment: TXN-…` or `payout: po_…`")
            return None
        target, value = next(iter(fields.items()))
        path = checker.id_path(value, f"/_sim/{target}s/{{}}/trace", f"`{target}`")
        return HttpCall("GET", path) if path is not None else None
