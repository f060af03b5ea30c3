"""Runs a scenario instance against a server, step by step, and says exactly what went wrong.

A step passes or fails on its own expectations; the first failing step ends the instance (the
following steps are reported as skipped, since they usually depend on it). HTTP steps without a
`status` or `error` expectation must answer 2xx, so a step never fails silently.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
from typing import Any, Protocol
from urllib.parse import quote

from payorch_cli.client import ApiError
from payorch_cli.credentials import Credential
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.expressions import EnvScope, ExprError, render
from payorch_cli.scenario.http import Exchange, ScenarioClient
from payorch_cli.scenario.matchers import MISSING, Matcher, Mismatch, show
from payorch_cli.scenario.model import EventExpectation, Instance, SaveRule, Step
from payorch_cli.scenario.receiver import Delivery, Receiver
from payorch_cli.scenario.results import Failure, InstanceResult, StepFailed, StepResult

_SEGMENT = re.compile(r"[^.\[\]]+|\[\d+\]")


class Reporter(Protocol):
    def instance_started(self, instance: Instance) -> None: ...
    def step_started(self, instance: Instance, step: Step) -> None: ...
    def step_finished(self, instance: Instance, result: StepResult) -> None: ...
    def instance_finished(self, result: InstanceResult) -> None: ...


def extract(data: Any, path: str) -> Any:
    """`a.b[0].c` (or `a.b.0.c`) in JSON data; MISSING if absent. `.` is the whole value."""
    if path in (".", ""):
        return data
    for segment in _SEGMENT.findall(path):
        key: Any = int(segment[1:-1]) if segment.startswith("[") else segment
        if isinstance(data, list) and isinstance(key, str) and key.isdigit():
            key = int(key)
        in_dict = isinstance(data, dict) and isinstance(key, str) and key in data
        in_list = isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data)
        if not (in_dict or in_list):
            return MISSING
        data = data[key]
    return data


def diff_lines(matcher: Matcher, actual: Any, scope: dict[str, Any]) -> list[str]:
    import difflib

    def pretty(value: Any) -> list[str]:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str).splitlines()

    expected = pretty(matcher.expected_view(actual, scope))
    got = pretty(matcher.actual_view(actual))
    return list(difflib.unified_diff(expected, got, "expected", "actual", lineterm="", n=2))


class Runner:
    """Runs instances against `base_url`; one Runner per server."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        default: Credential,
        reporter: Reporter,
        run_id: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.default = default
        self.reporter = reporter
        self.run_id = run_id or secrets.token_hex(4)

    def run(self, instance: Instance) -> InstanceResult:
        return _InstanceRun(self, instance).run()


class _InstanceRun:
    def __init__(self, runner: Runner, instance: Instance) -> None:
        self.runner = runner
        self.instance = instance
        self.scenario = instance.scenario
        self.client = ScenarioClient(runner.base_url, runner.default.key or "none")
        self.receiver: Receiver | None = None
        self.slots: dict[str, dict[str, Any]] = {}  # credential key -> subscription info
        self.consumed: set[str] = set()
        self.scope: dict[str, Any] = {
            "env": EnvScope(),
            "run": {"id": runner.run_id},
            "scenario": {
                "name": self.scenario.name,
                "title": instance.title,
                "path": self.scenario.path,
            },
            "base_url": runner.base_url,
            **instance.cell,
        }
        self.result = InstanceResult(instance, base_url=runner.base_url)

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> InstanceResult:
        started = time.perf_counter()
        self.runner.reporter.instance_started(self.instance)
        try:
            for name, value in self.scenario.vars.items():
                self.scope[name] = render(value, self.scope)
            self.default = self._credential(self.scenario.as_)
            if self.scenario.uses_receiver:
                self._listen(self.default)
                for step in self.scenario.steps:
                    if step.event is not None and step.as_ is not None:
                        self._listen(self._credential(step.as_))
        except (ApiError, ExprError, KeyError, StepFailed) as exc:
            self.result.error = f"setup: {_reason(exc)}"
        failed = self.result.error is not None
        for step in self.scenario.steps:
            if failed:  # later steps usually depend on the failed one: say they did not run
                skipped = StepResult(step, "skipped")
                self.result.steps.append(skipped)
                self.runner.reporter.step_finished(self.instance, skipped)
                continue
            self.runner.reporter.step_started(self.instance, step)
            outcome = self._step(step)
            self.result.steps.append(outcome)
            self.runner.reporter.step_finished(self.instance, outcome)
            failed = outcome.status == "failed"
        self._cleanup()
        self.result.duration = time.perf_counter() - started
        self.runner.reporter.instance_finished(self.result)
        return self.result

    def _credential(self, value: Any) -> Credential:
        if value is None:
            return getattr(self, "default", None) or self.runner.default
        name = render(value, self.scope)
        return self.runner.credentials.resolve(str(name))

    def _listen(self, credential: Credential) -> None:
        """Subscribe (to every event) as this credential: our receiver in sandbox, a managed
        inbox in production (the API accepts http:// URLs only in sandbox)."""
        if credential.key in self.slots:
            return
        slot = f"s{len(self.slots) + 1}"
        body: dict[str, Any] = {
            "events": "*",
            "description": f"payorch scenario: {self.instance.title}"[:240],
        }
        if credential.environment != "production":
            if self.receiver is None:
                self.receiver = Receiver()
            body["url"] = self.receiver.url(slot)
        exchange = self._send("POST", "/webhooks", credential, body=body)
        if exchange.status != 201 or not isinstance(exchange.json, dict):
            raise StepFailed(
                Failure(
                    f"could not subscribe the event receiver as {credential.name}: "
                    f"{exchange.status} {exchange.text[:300]}"
                )
            )
        sub = exchange.json
        if self.receiver is not None and "url" in body:
            self.receiver.arm(slot, sub["secret"])
        self.slots[credential.key or ""] = {
            "slot": slot,
            "id": sub["id"],
            "secret": sub["secret"],
            "credential": credential,
            "inbox": "url" not in body,
        }
        if not self.scope.get("receiver"):
            self.scope["receiver"] = {
                "url": body.get("url"),
                "webhook_id": sub["id"],
                "secret": sub["secret"],
            }

    def _cleanup(self) -> None:
        for info in self.slots.values():
            with contextlib.suppress(ApiError):  # a server that is gone needs no cleaning
                self._send("DELETE", f"/webhooks/{info['id']}", info["credential"])
        if self.receiver is not None:
            self.receiver.close()
        self.client.close()

    # -- steps -------------------------------------------------------------------------------

    def _step(self, step: Step) -> StepResult:
        started = time.perf_counter()
        result = StepResult(step, "passed")
        try:
            result.credential = self._credential(step.as_)
            if step.http is not None:
                self._http(step, result)
            elif step.kind == "advance_clock":
                self._advance(step, result)
            elif step.event is not None:
                self._event(step, step.event, result)
            elif step.receiver is not None:
                self._receiver_change(step)
            elif step.kind in ("restore_state", "save_state"):
                self._saved_state(step, result)
        except StepFailed as exc:
            result.status, result.failure = "failed", exc.failure
        except (ExprError, KeyError) as exc:
            result.status, result.failure = "failed", Failure(_reason(exc))
        except ApiError as exc:  # the server went away
            result.status, result.failure = "failed", Failure(exc.message)
        result.duration = time.perf_counter() - started
        return result

    def _send(
        self,
        method: str,
        path: str,
        credential: Credential,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        raw: str | None = None,
        has_body: bool | None = None,
    ) -> Exchange:
        sent = dict(headers or {})
        payload = None
        if raw is not None:
            payload = raw.encode()
        elif body is not None or has_body:
            payload = json.dumps(body).encode()
            if not any(k.lower() == "content-type" for k in sent):
                sent["Content-Type"] = "application/json"
        return self.client.exchange(
            method, path, key=credential.key, headers=sent, query=query, body=payload
        )

    def _http(self, step: Step, result: StepResult) -> None:
        call = step.http
        assert call is not None and result.credential is not None
        path = str(render(call.path, self.scope))
        headers = {k: str(render(v, self.scope)) for k, v in call.headers.items()}
        query = render(call.query, self.scope)
        body = render(call.body, self.scope) if call.has_body else None
        raw = render(call.raw, self.scope) if call.raw is not None else None
        attempts = step.retry.attempts if step.retry else 1
        for attempt in range(1, attempts + 1):
            exchange = self._send(
                call.method,
                path,
                result.credential,
                body=body,
                headers=headers,
                query=query,
                raw=raw,
                has_body=call.has_body,
            )
            result.exchange = exchange
            failure = self._check(step, exchange)
            if failure is None:
                break
            if attempt == attempts:
                if attempts > 1:
                    failure.notes.append(f"still failing after {attempts} attempts")
                raise StepFailed(failure)
            assert step.retry is not None
            time.sleep(step.retry.interval)
        result.note = f"{exchange.status} in {exchange.duration_ms:.0f} ms"
        self._save(step.save, exchange.json, exchange.headers, "the response")

    def _check(self, step: Step, exchange: Exchange) -> Failure | None:
        expect = step.expect
        body = exchange.json if exchange.is_json else exchange.text
        mismatches: list[Mismatch] = []
        diff: list[str] = []
        defaulted = expect is None or (expect.status is None and expect.error is None)
        if defaulted and not 200 <= exchange.status < 300:
            mismatches.append(
                Mismatch("status", f"expected 2xx, got {exchange.status}{_error_summary(body)}")
            )
        if expect is not None:
            if expect.status is not None:
                found = expect.status.check(exchange.status, "status", self.scope)
                mismatches += [Mismatch(m.path, m.message + _error_summary(body)) for m in found]
            if expect.error is not None:
                error = body.get("error", MISSING) if isinstance(body, dict) else MISSING
                if expect.status is None and exchange.status < 400:
                    mismatches.append(
                        Mismatch("status", f"expected an error, got {exchange.status}")
                    )
                found = expect.error.check(error, "error", self.scope)
                mismatches += found
                if found:
                    diff += diff_lines(expect.error, error, self.scope)
            for name, matcher in expect.headers.items():
                value = exchange.headers.get(name.lower(), MISSING)
                mismatches += matcher.check(value, f"headers.{name}", self.scope)
            if expect.json is not None:
                if not exchange.is_json:
                    mismatches.append(
                        Mismatch(
                            "json",
                            f"the answer is not JSON ({exchange.headers.get('content-type')})",
                        )
                    )
                else:
                    found = expect.json.check(body, "json", self.scope)
                    mismatches += found
                    if found:
                        diff += diff_lines(expect.json, body, self.scope)
        if not mismatches:
            return None
        first = mismatches[0]
        more = f" (+{len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
        return Failure(f"{first.path}: {first.message}{more}", mismatches, diff)

    def _save(self, rules: list[SaveRule], data: Any, headers: dict[str, str], what: str) -> None:
        for rule in rules:
            if rule.source == "header":
                value = headers.get(rule.path.lower(), MISSING)
            else:
                value = extract(data, rule.path)
            if value is MISSING:
                where = rule.path if rule.source == "json" else f"header {rule.path}"
                keys = ", ".join(sorted(data)[:15]) if isinstance(data, dict) else show(data)
                raise StepFailed(
                    Failure(f"save {rule.name}: no {where} in {what} (it has: {keys})")
                )
            self.scope[rule.name] = value

    def _advance(self, step: Step, result: StepResult) -> None:
        assert result.credential is not None and step.seconds is not None
        exchange = self._send(
            "POST", "/_sim/clock/advance", result.credential, body={"seconds": step.seconds}
        )
        result.exchange = exchange
        if exchange.status != 200:
            raise StepFailed(
                Failure(f"the clock did not move: {exchange.status}{_error_summary(exchange.json)}")
            )
        result.note = f"now {exchange.json.get('now')}"

    def _saved_state(self, step: Step, result: StepResult) -> None:
        assert result.credential is not None and step.state is not None
        name = quote(step.state, safe="")
        if step.kind == "save_state":
            body = {"name": step.state, "overwrite": True}
            exchange = self._send("POST", "/_sim/state", result.credential, body=body)
            expected, what = 201, "saved"
        else:
            exchange = self._send("POST", f"/_sim/state/{name}/restore", result.credential)
            expected, what = 200, "restored"
        result.exchange = exchange
        if exchange.status != expected:
            raise StepFailed(
                Failure(
                    f"the state {step.state} was not {what}: "
                    f"{exchange.status}{_error_summary(exchange.json)}"
                )
            )
        result.note = f"{exchange.json.get('transactions')} transactions"
        if step.kind == "restore_state":
            self._follow_restore()

    def _follow_restore(self) -> None:
        """After a restore: the events received before belong to a world that is gone, and the
        receiver's subscriptions are made again where the saved state does not hold them."""
        if self.receiver is not None:
            self.consumed.update(d.event_id for d in self.receiver.deliveries)
        for info in self.slots.values():
            self.consumed.update(d.event_id for d in info.get("records", []))
            exchange = self._send("GET", f"/webhooks/{info['id']}", info["credential"])
            if exchange.status == 200:
                continue
            body: dict[str, Any] = {
                "events": "*",
                "description": f"payorch scenario: {self.instance.title}"[:240],
            }
            if not info["inbox"] and self.receiver is not None:
                body["url"] = self.receiver.url(info["slot"])
            created = self._send("POST", "/webhooks", info["credential"], body=body)
            if created.status != 201 or not isinstance(created.json, dict):
                raise StepFailed(
                    Failure(
                        "could not subscribe the event receiver again after the restore: "
                        f"{created.status} {created.text[:300]}"
                    )
                )
            sub = created.json
            if "url" in body and self.receiver is not None:
                self.receiver.arm(info["slot"], sub["secret"])
            receiver_scope = self.scope.get("receiver")
            if isinstance(receiver_scope, dict) and receiver_scope.get("webhook_id") == info["id"]:
                receiver_scope.update(webhook_id=sub["id"], secret=sub["secret"])
            info.update(id=sub["id"], secret=sub["secret"], records=[])

    def _receiver_change(self, step: Step) -> None:
        change = step.receiver
        assert change is not None
        if self.receiver is None:
            raise StepFailed(Failure("no receiver runs in this scenario (production only?)"))
        if change.status is not None:
            self.receiver.status = int(render(change.status, self.scope))
        if change.secret is not None:
            info = self.slots.get(self.default.key or "")
            if info is None:
                raise StepFailed(Failure("the receiver has no subscription to re-key"))
            self.receiver.arm(info["slot"], str(render(change.secret, self.scope)))

    # -- events ------------------------------------------------------------------------------

    def _event(self, step: Step, event: EventExpectation, result: StepResult) -> None:
        assert result.credential is not None
        info = self.slots.get(result.credential.key or "")
        if info is None:
            raise StepFailed(Failure(f"no subscription as {result.credential.name}"))
        started = time.monotonic()

        def candidates() -> list[Delivery]:
            if info["inbox"]:
                self._poll_inbox(info)
            # In arrival order: the receiver's deliveries of this slot and type (indexed, so a
            # long scenario does not rescan every delivery at every step), then inbox records.
            received = (
                self.receiver.by_type.get((info["slot"], event.type), []) if self.receiver else []
            )
            records = [
                d
                for d in info.get("records", [])
                if d.slot == info["slot"] and d.event_type == event.type
            ]
            return [d for d in received + records if d.event_id not in self.consumed]

        def matching() -> Delivery | None:
            for delivery in candidates():
                if not self._event_mismatches(event, delivery):
                    return delivery
            return None

        if info["inbox"]:
            found = None
            while time.monotonic() - started < event.within and found is None:
                found = matching()
                if found is None:
                    time.sleep(0.05)
        elif self.receiver is not None:
            found = self.receiver.wait(matching, event.within)
        else:
            found = None
        waited = (time.monotonic() - started) * 1000
        if event.absent:
            if found is not None:
                raise StepFailed(
                    Failure(
                        f"{event.type} was delivered ({found.event_id}) and should not have been",
                        notes=[json.dumps(found.envelope, ensure_ascii=False)[:600]],
                    )
                )
            result.note = f"none in {event.within:g} s"
            return
        if found is None:
            raise StepFailed(self._event_failure(event, candidates(), info))
        if found.verified is False:
            raise StepFailed(
                Failure(
                    f"{event.type} {found.event_id} arrived but its signature "
                    f"did not verify: {found.problem}"
                )
            )
        self.consumed.add(found.event_id)
        result.note = f"{found.event_id} after {waited:.0f} ms"
        self._save(step.save, found.envelope, found.headers, "the event")

    def _event_mismatches(self, event: EventExpectation, delivery: Delivery) -> list[Mismatch]:
        out: list[Mismatch] = []
        if event.match is not None:
            out += event.match.check(delivery.envelope or {}, "event", self.scope)
        for name, matcher in event.headers.items():
            out += matcher.check(
                delivery.headers.get(name.lower(), MISSING), f"headers.{name}", self.scope
            )
        return out

    def _event_failure(
        self, event: EventExpectation, near: list[Delivery], info: dict[str, Any]
    ) -> Failure:
        every = (self.receiver.deliveries if self.receiver else []) + info.get("records", [])
        seen = [_describe(d) for d in every if d.slot == info["slot"]]
        notes = ["received: " + ("; ".join(seen) if seen else "nothing")]
        if not near:
            return Failure(f"no {event.type} within {event.within:g} s", notes=notes)
        best = min(near, key=lambda d: len(self._event_mismatches(event, d)))
        mismatches = self._event_mismatches(event, best)
        diff = diff_lines(event.match, best.envelope or {}, self.scope) if event.match else []
        return Failure(
            f"{len(near)} {event.type} event(s) arrived within {event.within:g} s but none "
            f"matched; closest {best.event_id}: {mismatches[0].path}: {mismatches[0].message}",
            mismatches,
            diff,
            notes,
        )

    def _poll_inbox(self, info: dict[str, Any]) -> None:
        exchange = self._send(
            "GET", f"/webhooks/{info['id']}/deliveries", info["credential"], query={"limit": 100}
        )
        records = info.setdefault("records", [])
        known = {d.headers.get("x-service-delivery") for d in records}
        for row in reversed((exchange.json or {}).get("data", [])):
            if row["id"] in known:
                continue
            envelope = row.get("event") or {}
            records.append(
                Delivery(
                    info["slot"], {"x-service-delivery": row["id"]}, b"", envelope, None, None, 0
                )
            )


def _describe(delivery: Delivery) -> str:
    text = f"{delivery.event_type} {delivery.event_id}"
    data = (delivery.envelope or {}).get("data")
    if isinstance(data, dict) and data.get("id"):
        text += f" (data.id {data['id']})"
    if delivery.verified is False:
        text += f" [bad signature: {delivery.problem}]"
    return text


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return str(exc.args[0])
    if isinstance(exc, StepFailed):
        return exc.failure.message
    if isinstance(exc, ApiError):
        return exc.message
    return str(exc)


def _error_summary(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        return f" ({error.get('code')}: {error.get('message')})"
    return ""
