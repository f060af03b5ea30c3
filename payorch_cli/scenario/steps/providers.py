"""The simulated providers' steps (design.md 1.5; production keys only, the sandbox cascade
always accepts): `provider` reads one, changes it, gives it an incident or ends its incidents;
`reset_providers` puts every provider back as the fixtures define it."""

from __future__ import annotations

from typing import Any, ClassVar

from payorch import vocabulary
from payorch_cli.durations import format_duration
from payorch_cli.scenario.checks import did_you_mean
from payorch_cli.scenario.expressions import ExprError, compile_string
from payorch_cli.scenario.model import HttpCall, Step
from payorch_cli.scenario.source import Node
from payorch_cli.scenario.steps.http import NO_ARGUMENTS, HttpStep, shown_path
from payorch_cli.scenario.steps.reading import StepChecker, duration_schema

# What `provider: {set: ...}` and `{incident: ...}` take, in the scenario's words (durations
# like the other steps) -> the control plane's.
PROVIDER_BEHAVIOURS = vocabulary.PROVIDER_BEHAVIOURS
PROVIDER_SET_KEYS = ("behaviour", "declineRate", "declineReason", "seed", "latency", "callback")
PROVIDER_CALLBACK_KEYS = ("after", "outcome", "mode")
PROVIDER_INCIDENT_KEYS = ("behaviour", "for", "in", "declineReason")
PROVIDER_ACTIONS = ("set", "incident", "end_incidents")
BEHAVIOUR_SCHEMA: dict[str, Any] = {
    "type": "string",
    "x-vocabulary": "PROVIDER_BEHAVIOURS",
    "description": "What the provider does with a production call; pay-in and payout providers "
    "take different ones (`payorch providers set --help` lists them).",
}


class Provider(HttpStep):
    name = "provider"
    description = (
        "A simulated provider (production keys only; the sandbox cascade always accepts): {id} "
        "reads it (GET /_sim/providers/{id}), {id, set} changes it (PATCH), {id, incident} gives "
        "it a behaviour for a window of simulated time (POST /_sim/providers/{id}/incidents), "
        "{id, end_incidents: true | INCIDENT_ID} ends its incidents now (DELETE "
        "/_sim/providers/{id}/incidents[/{incidentId}])."
    )
    schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"],
        "properties": {
            "id": {
                "type": "string",
                "description": "A provider id, as `payorch providers` lists them.",
            },
            "set": {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {
                    "behaviour": BEHAVIOUR_SCHEMA,
                    "declineRate": {
                        "type": ["number", "string"],
                        "description": "Share of charges declined while accepting, 0 to 1.",
                    },
                    "declineReason": {"type": ["string", "null"]},
                    "seed": {
                        "type": ["integer", "string", "null"],
                        "description": "Seed of the decline draws: the same charges every run.",
                    },
                    "latency": duration_schema("A duration, or 0 for none.", zero=True),
                    "callback": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "after": duration_schema(
                                "When the callback comes; null: never (only the 5-minute "
                                "reconciliation poll settles a pay-in); 0 on a payout provider: "
                                "it confirms in its dispatch answer.",
                                null=True,
                                zero=True,
                            ),
                            "outcome": {
                                "type": "string",
                                "x-vocabulary": "PROVIDER_CALLBACK_OUTCOMES",
                                "description": "What the callback reports; pay-in and payout "
                                "providers report different ones.",
                            },
                            "mode": {"type": "string", "x-vocabulary": "PROVIDER_CALLBACK_MODES"},
                        },
                    },
                },
            },
            "incident": {
                "type": "object",
                "additionalProperties": False,
                "required": ["behaviour", "for"],
                "properties": {
                    "behaviour": BEHAVIOUR_SCHEMA,
                    "for": duration_schema("How long, in simulated time."),
                    "in": duration_schema("Start this far from now (default: now).", zero=True),
                    "declineReason": {"type": "string"},
                },
            },
            "end_incidents": {
                "description": "End the provider's incidents now (an active one at the clock's "
                "now, a scheduled one never starts): true for every one (DELETE "
                "/_sim/providers/{id}/incidents), or one incident's id, e.g. a saved ${inc} "
                "(DELETE /_sim/providers/{id}/incidents/{incidentId}).",
                "oneOf": [{"const": True}, {"type": "string", "minLength": 1}],
            },
        },
        "not": {
            "anyOf": [
                {"required": ["set", "incident"]},
                {"required": ["set", "end_incidents"]},
                {"required": ["incident", "end_incidents"]},
            ]
        },
    }

    def default_name(self, step: Step) -> str:
        return step_name(step.http) if step.http is not None else self.name

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        """`provider: {id}` reads it, `{id, set: {...}}` changes it (PATCH), `{id, incident:
        {behaviour, for, in?, declineReason?}}` schedules a window of another behaviour, `{id,
        end_incidents: true}` ends all its incidents now (`end_incidents: inc_…`: that one)."""
        entries = checker.mapping(node, "`provider`")
        if entries is None:
            return None
        fields = checker.keys(entries, ("id", *PROVIDER_ACTIONS), "`provider`")
        if "id" not in fields:
            checker.error(
                node.loc, "`provider` needs `id` (a provider id, as `payorch providers` lists)"
            )
            return None
        actions = [key for key in PROVIDER_ACTIONS if key in fields]
        if len(actions) > 1:
            checker.error(
                node.loc,
                f"`provider` takes one of `set`, `incident` or `end_incidents`, not "
                f"`{actions[0]}` and `{actions[1]}` (write two steps)",
            )
            return None
        if "end_incidents" in fields:
            return self.end_incidents(checker, fields["id"], fields["end_incidents"])
        path = checker.id_path(fields["id"], "/_sim/providers/{}", "`id`")
        if path is None:
            return None
        if "set" in fields:
            body = self.settings(checker, fields["set"])
            return HttpCall("PATCH", path, body=body, has_body=True) if body is not None else None
        if "incident" in fields:
            body = self.incident(checker, fields["incident"])
            if body is None:
                return None
            incidents = checker.id_path(fields["id"], "/_sim/providers/{}/incidents", "`id`")
            return HttpCall("POST", incidents, body=body, has_body=True)
        return HttpCall("GET", path)

    def end_incidents(self, checker: StepChecker, provider: Node, node: Node) -> HttpCall | None:
        """`end_incidents: true`: DELETE every incident of the provider; `end_incidents: inc_…`
        (or a saved `${…}`): that one."""
        if node.is_scalar and node.value() is True:
            path = checker.id_path(provider, "/_sim/providers/{}/incidents", "`id`")
            return None if path is None else HttpCall("DELETE", path)
        if node.is_scalar and isinstance(node.value(), str):
            provider_id = checker.string(provider, "`id`")
            incident_id = checker.string(node, "`end_incidents`")
            if provider_id is None or incident_id is None:
                return None
            try:
                path = compile_string(f"/_sim/providers/{provider_id}/incidents/{incident_id}")
            except ExprError as exc:
                checker.error(node.loc, str(exc))
                return None
            return HttpCall("DELETE", path)
        checker.error(
            node.loc,
            "`end_incidents` takes `true` (every incident of the provider) or one incident's "
            "id (`inc_…`, or a saved `${…}`)",
        )
        return None

    def behaviour(self, checker: StepChecker, node: Node) -> Any:
        value = checker.compiled(node)
        if isinstance(value, str) and value not in PROVIDER_BEHAVIOURS:
            checker.error(
                node.loc,
                f"unknown behaviour `{value}`{did_you_mean(value, PROVIDER_BEHAVIOURS)} "
                f"(behaviours: {', '.join(PROVIDER_BEHAVIOURS)})",
            )
        return value

    def settings(self, checker: StepChecker, node: Node) -> dict[str, Any] | None:
        entries = checker.mapping(node, "`set`")
        if entries is None:
            return None
        fields = checker.keys(entries, PROVIDER_SET_KEYS, "`provider.set`")
        if not entries:
            checker.error(node.loc, f"`set` needs one of: {', '.join(PROVIDER_SET_KEYS)}")
        body: dict[str, Any] = {}
        for key, value in fields.items():
            if key == "behaviour":
                body["behaviour"] = self.behaviour(checker, value)
            elif key == "latency":
                body["latencySeconds"] = checker.duration_or(value, "`latency`", zero=True)
            elif key == "callback":
                body["callback"] = self.callback(checker, value)
            else:
                body[key] = checker.compiled(value)
        return body

    def callback(self, checker: StepChecker, node: Node) -> dict[str, Any]:
        fields = checker.keys(
            checker.mapping(node, "`callback`") or [], PROVIDER_CALLBACK_KEYS, "`callback`"
        )
        out: dict[str, Any] = {}
        if "after" in fields:  # null: the provider never calls back; only the poll settles
            out["afterSeconds"] = checker.duration_or(
                fields["after"], "`callback.after`", zero=True
            )
        if "outcome" in fields:
            out["outcome"] = checker.compiled(fields["outcome"])
        if "mode" in fields:
            out["mode"] = checker.compiled(fields["mode"])
        return out

    def incident(self, checker: StepChecker, node: Node) -> dict[str, Any] | None:
        entries = checker.mapping(node, "`incident`")
        if entries is None:
            return None
        fields = checker.keys(entries, PROVIDER_INCIDENT_KEYS, "`provider.incident`")
        for required in ("behaviour", "for"):
            if required not in fields:
                checker.error(node.loc, f"`incident` needs `{required}`")
        if "behaviour" not in fields or "for" not in fields:
            return None
        body: dict[str, Any] = {
            "behaviour": self.behaviour(checker, fields["behaviour"]),
            "durationSeconds": checker.duration(fields["for"], "`for`"),
        }
        if "in" in fields:
            body["startsInSeconds"] = checker.duration_or(fields["in"], "`in`", zero=True)
        if "declineReason" in fields:
            body["declineReason"] = checker.compiled(fields["declineReason"])
        return body


class ResetProviders(HttpStep):
    name = "reset_providers"
    description = "POST /_sim/providers/reset: every provider back as the fixtures define it."
    schema: ClassVar[dict[str, Any]] = NO_ARGUMENTS
    short_name = "put every provider back as the fixtures define it"

    def call(self, checker: StepChecker, node: Node) -> HttpCall | None:
        if not (node.is_null or (node.is_map and not node.raw.value)):
            checker.error(
                node.loc, "`reset_providers` takes no arguments (write `reset_providers: {}`)"
            )
        return HttpCall("POST", "/_sim/providers/reset", body=None, has_body=False)


def step_name(call: HttpCall) -> str:
    """`provider prv_stp_mx: set behaviour=outage`, `provider prv_stp_mx: outage for 10m`."""
    shown = shown_path(call.path)
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
