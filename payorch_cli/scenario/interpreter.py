"""Runs a scenario instance against a server, step by step, and says exactly what went wrong.

A step passes or fails on its own expectations; the first failing step ends the instance (the
following steps are reported as skipped, since they usually depend on it). HTTP steps without a
`status` or `error` expectation must answer 2xx, so a step never fails silently.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from typing import Any, Protocol

from payorch_cli.client import TOOL_HEADER, ApiError
from payorch_cli.credentials import Credential
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.expressions import EnvScope, ExprError, render
from payorch_cli.scenario.http import Exchange, ScenarioClient
from payorch_cli.scenario.model import Instance, Step
from payorch_cli.scenario.receiver import Delivery, Receiver
from payorch_cli.scenario.results import Failure, InstanceResult, StepFailed, StepResult
from payorch_cli.scenario.steps import REGISTRY


class Reporter(Protocol):
    def instance_started(self, instance: Instance) -> None: ...
    def step_started(self, instance: Instance, step: Step) -> None: ...
    def step_finished(self, instance: Instance, result: StepResult) -> None: ...
    def instance_finished(self, result: InstanceResult) -> None: ...


class Runner:
    """Runs instances against `base_url`; one Runner per server."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        default: Credential,
        reporter: Reporter,
        run_id: str | None = None,
        env: EnvScope | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.credentials = credentials
        self.default = default
        self.reporter = reporter
        self.run_id = run_id or secrets.token_hex(4)
        self.env = env or EnvScope()  # payorch mcp narrows it to --allow-env's names

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
            "env": runner.env,
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
        exchange = self._send("POST", "/webhooks", credential, body=body, tool=True)
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
                self._send("DELETE", f"/webhooks/{info['id']}", info["credential"], tool=True)
        if self.receiver is not None:
            self.receiver.close()
        self.client.close()

    # -- steps -------------------------------------------------------------------------------

    def _step(self, step: Step) -> StepResult:
        started = time.perf_counter()
        result = StepResult(step, "passed")
        try:
            result.credential = self._credential(step.as_)
            REGISTRY[step.kind].run(self, step, result)
        except StepFailed as exc:
            result.status, result.failure = "failed", exc.failure
        except (ExprError, KeyError) as exc:
            result.status, result.failure = "failed", Failure(_reason(exc))
        except ApiError as exc:  # the server went away
            result.status, result.failure = "failed", Failure(exc.message)
        result.duration = time.perf_counter() - started
        return result

    def send(
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
        """A step's own call (steps/running.StepRun), as the scenario wrote it."""
        return self._send(
            method,
            path,
            credential,
            body=body,
            headers=headers,
            query=query,
            raw=raw,
            has_body=has_body,
        )

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
        tool: bool = False,
    ) -> Exchange:
        """One exchange; `tool` tags the runner's own housekeeping (its event receiver's
        subscriptions and inbox polls), which the request log and coverage then leave out; a
        step's own call is the scenario's, untagged."""
        sent = dict(headers or {})
        if tool:
            sent[TOOL_HEADER] = "scenario"
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

    def follow_restore(self) -> None:
        """After a restore: the events received before belong to a world that is gone, and the
        receiver's subscriptions are made again where the saved state does not hold them."""
        if self.receiver is not None:
            self.consumed.update(d.event_id for d in self.receiver.deliveries)
        for info in self.slots.values():
            self.consumed.update(d.event_id for d in info.get("records", []))
            exchange = self._send("GET", f"/webhooks/{info['id']}", info["credential"], tool=True)
            if exchange.status == 200:
                continue
            body: dict[str, Any] = {
                "events": "*",
                "description": f"payorch scenario: {self.instance.title}"[:240],
            }
            if not info["inbox"] and self.receiver is not None:
                body["url"] = self.receiver.url(info["slot"])
            created = self._send("POST", "/webhooks", info["credential"], body=body, tool=True)
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

    def poll_inbox(self, info: dict[str, Any]) -> None:
        exchange = self._send(
            "GET",
            f"/webhooks/{info['id']}/deliveries",
            info["credential"],
            query={"limit": 100},
            tool=True,
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


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return str(exc.args[0])
    if isinstance(exc, StepFailed):
        return exc.failure.message
    if isinstance(exc, ApiError):
        return exc.message
    return str(exc)
