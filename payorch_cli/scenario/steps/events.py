"""`expect_event` and `expect_no_event`: a signed delivery of an event type (matching `match`
and `headers`) to the runner's receiver within `within`, or none. The receiver is the runner's
own endpoint in sandbox, a managed inbox it polls in production; each delivery satisfies one
`expect_event` at most."""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from payorch.vocabulary import EVENT_TYPES
from payorch_cli.scenario.checks import did_you_mean
from payorch_cli.scenario.matchers import MISSING, Mismatch
from payorch_cli.scenario.model import EventExpectation, Step
from payorch_cli.scenario.receiver import Delivery
from payorch_cli.scenario.results import Failure, StepFailed, StepResult
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.base import StepKind
from payorch_cli.scenario.steps.reading import StepChecker, duration_schema, matcher_names
from payorch_cli.scenario.steps.running import StepRun, diff_lines, save_values


def event_schema() -> dict[str, Any]:
    """An event type alone, or {type, match, headers, within}; the types' enum is filled in from
    the vocabulary when the schema is served (`payorch_cli.scenario.schema.served`)."""
    return {
        "oneOf": [
            {"type": "string", "x-vocabulary": "EVENT_TYPES"},
            {
                "type": "object",
                "required": ["type"],
                "additionalProperties": False,
                "properties": {
                    "type": {"type": "string", "x-vocabulary": "EVENT_TYPES"},
                    "match": {"$ref": "#/$defs/expected"},
                    "headers": {
                        "type": "object",
                        "additionalProperties": {"$ref": "#/$defs/expected"},
                    },
                    "within": duration_schema(),
                },
            },
        ]
    }


class EventStep(StepKind):
    """Waits on the receiver for an event type."""

    absent: ClassVar[bool]  # expect_no_event: the step passes if none comes
    schema: ClassVar[dict[str, Any]] = event_schema()
    listens = True

    def parse(
        self, checker: StepChecker, step: Step, fields: dict[str, Node], defined: set[str]
    ) -> None:
        action = fields[self.name]
        step.event = self.expectation(checker, action)
        if step.event is not None:
            matchers = [
                m for m in (step.event.match, *step.event.headers.values()) if m is not None
            ]
            checker.names(matcher_names(matchers), action.loc, defined, f"in step {step.index}")

    def default_name(self, step: Step) -> str:
        if step.event is None:
            return self.name
        verb = "no" if step.event.absent else "expect"
        return f"{verb} {step.event.type}"

    def expectation(self, checker: StepChecker, node: Node) -> EventExpectation | None:
        kind, absent = self.name, self.absent
        if node.is_scalar:  # `expect_event: payment.completed`
            name = checker.string(node, f"`{kind}`")
            fields: dict[str, Node] = {}
        else:
            fields = checker.keys(
                checker.mapping(node, f"`{kind}`") or [],
                ("type", "match", "headers", "within"),
                f"`{kind}`",
            )
            if "type" not in fields:
                checker.error(node.loc, f"`{kind}` needs `type` (an event name)")
                return None
            name = checker.string(fields["type"], "`type`")
        if name is None:
            return None
        if name not in EVENT_TYPES:
            loc = fields["type"].loc if "type" in fields else node.loc
            checker.error(
                loc,
                f"unknown event type `{name}`{did_you_mean(name, EVENT_TYPES)} "
                f"(events: {', '.join(EVENT_TYPES)})",
            )
        out = EventExpectation(name, node.loc, absent=absent, within=1.0 if absent else 5.0)
        if "match" in fields:
            out.match = checker.matcher(fields["match"])
        if "headers" in fields:
            for key, _, value in checker.mapping(fields["headers"], "`headers`") or []:
                matcher = checker.matcher(value)
                if matcher is not None:
                    out.headers[key] = matcher
        if "within" in fields:
            out.within = checker.duration(fields["within"], "`within`") or out.within
        return out

    def run(self, run: StepRun, step: Step, result: StepResult) -> None:
        event = step.event
        assert event is not None
        assert result.credential is not None
        info = run.slots.get(result.credential.key or "")
        if info is None:
            raise StepFailed(Failure(f"no subscription as {result.credential.name}"))
        started = time.monotonic()
        found = self.wait(run, event, info)
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
            raise StepFailed(self.failure(run, event, self.candidates(run, event, info), info))
        if found.verified is False:
            raise StepFailed(
                Failure(
                    f"{event.type} {found.event_id} arrived but its signature "
                    f"did not verify: {found.problem}"
                )
            )
        run.consumed.add(found.event_id)
        result.note = f"{found.event_id} after {waited:.0f} ms"
        save_values(run.scope, step.save, found.envelope, found.headers, "the event")

    def wait(self, run: StepRun, event: EventExpectation, info: dict[str, Any]) -> Delivery | None:
        """The first delivery not yet consumed that matches, within the step's `within`: pushed
        to the runner's receiver, or polled from a managed inbox."""

        def matching() -> Delivery | None:
            for delivery in self.candidates(run, event, info):
                if not self.mismatches(run, event, delivery):
                    return delivery
            return None

        if info["inbox"]:
            started = time.monotonic()
            found = None
            while time.monotonic() - started < event.within and found is None:
                found = matching()
                if found is None:
                    time.sleep(0.05)
            return found
        if run.receiver is not None:
            return run.receiver.wait(matching, event.within)
        return None

    def candidates(
        self, run: StepRun, event: EventExpectation, info: dict[str, Any]
    ) -> list[Delivery]:
        if info["inbox"]:
            run.poll_inbox(info)
        # In arrival order: the receiver's deliveries of this slot and type (indexed, so a
        # long scenario does not rescan every delivery at every step), then inbox records.
        received = run.receiver.by_type.get((info["slot"], event.type), []) if run.receiver else []
        records = [
            d
            for d in info.get("records", [])
            if d.slot == info["slot"] and d.event_type == event.type
        ]
        return [d for d in received + records if d.event_id not in run.consumed]

    def mismatches(
        self, run: StepRun, event: EventExpectation, delivery: Delivery
    ) -> list[Mismatch]:
        out: list[Mismatch] = []
        if event.match is not None:
            out += event.match.check(delivery.envelope or {}, "event", run.scope)
        for name, matcher in event.headers.items():
            out += matcher.check(
                delivery.headers.get(name.lower(), MISSING), f"headers.{name}", run.scope
            )
        return out

    def failure(
        self, run: StepRun, event: EventExpectation, near: list[Delivery], info: dict[str, Any]
    ) -> Failure:
        every = (run.receiver.deliveries if run.receiver else []) + info.get("records", [])
        seen = [describe(d) for d in every if d.slot == info["slot"]]
        notes = ["received: " + ("; ".join(seen) if seen else "nothing")]
        if not near:
            return Failure(f"no {event.type} within {event.within:g} s", notes=notes)
        best = min(near, key=lambda d: len(self.mismatches(run, event, d)))
        mismatches = self.mismatches(run, event, best)
        diff = diff_lines(event.match, best.envelope or {}, run.scope) if event.match else []
        return Failure(
            f"{len(near)} {event.type} event(s) arrived within {event.within:g} s but none "
            f"matched; closest {best.event_id}: {mismatches[0].path}: {mismatches[0].message}",
            mismatches,
            diff,
            notes,
        )


class ExpectEvent(EventStep):
    name = "expect_event"
    description = "Wait for a signed delivery to the runner's receiver (default within 5s)."
    keys = ("name", "as", "save")
    absent = False


class ExpectNoEvent(EventStep):
    name = "expect_no_event"
    description = "No such delivery within `within` (default 1s)."
    absent = True


def describe(delivery: Delivery) -> str:
    text = f"{delivery.event_type} {delivery.event_id}"
    data = (delivery.envelope or {}).get("data")
    if isinstance(data, dict) and data.get("id"):
        text += f" (data.id {data['id']})"
    if delivery.verified is False:
        text += f" [bad signature: {delivery.problem}]"
    return text
