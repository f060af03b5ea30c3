"""PATCH /_sim/providers/{id} and POST /_sim/providers/{id}/incidents bodies: shape and field
rules for a provider of a given kind, before its script is touched (`ProviderWorld.patch` and
`schedule_incident` apply what these return)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.domain.catalog import (
    CALLBACK_MODES,
    PAYIN_BEHAVIOURS,
    PAYIN_CALLBACK_OUTCOMES,
    PAYIN_DECLINE_REASONS,
    PAYOUT_BEHAVIOURS,
    PAYOUT_CALLBACK_OUTCOMES,
    PAYOUT_REJECT_REASONS,
)
from simulator.domain.errors import ApiError

PATCH_FIELDS = ("behaviour", "declineReason", "declineRate", "seed", "latencySeconds", "callback")
CALLBACK_FIELDS = ("afterSeconds", "outcome", "mode")
NULLABLE_FIELDS = ("declineReason", "latencySeconds")
INCIDENT_FIELDS = ("behaviour", "durationSeconds", "startsInSeconds", "declineReason")


@dataclass(frozen=True, slots=True)
class IncidentRequest:
    behaviour: str
    duration: float
    starts_in: float
    decline_reason: str | None  # None: the provider's own, or its kind's default


def parse_provider_patch(body: dict[str, Any], kind: str) -> dict[str, Any]:
    """The overrides a PATCH sets (by the body's field names), or 400 naming the first bad
    field."""
    _only(body, PATCH_FIELDS, "")
    # Null is absence (the API's convention), but where null is a value: no decline reason,
    # no latency, no callback.
    body = {k: v for k, v in body.items() if v is not None or k in NULLABLE_FIELDS}
    changes: dict[str, Any] = {}
    if "behaviour" in body:
        changes["behaviour"] = _behaviour(body["behaviour"], kind, "behaviour")
    if "declineReason" in body:
        reason = body["declineReason"]
        changes["declineReason"] = (
            None if reason is None else _reason(reason, kind, "declineReason")
        )
    if "declineRate" in body:
        if kind == "payout":
            raise _invalid("declineRate", "a payout provider has no decline rate")
        changes["declineRate"] = _number(body["declineRate"], "declineRate", high=1.0)
    if "seed" in body:
        seed = body["seed"]
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise _invalid("seed", "must be a non-negative integer")
        changes["seed"] = seed
    if "latencySeconds" in body:
        latency = body["latencySeconds"]
        changes["latencySeconds"] = None if latency is None else _number(latency, "latencySeconds")
    if "callback" in body:
        changes.update(_callback_changes(body["callback"], kind))
    return changes


def parse_incident_request(body: dict[str, Any], kind: str) -> IncidentRequest:
    """The incident a POST asks for (its decline reason, if given), or 400 naming the first bad
    or missing field."""
    _only(body, INCIDENT_FIELDS, "")
    if body.get("behaviour") is None:
        raise ApiError("missing_field", "`behaviour` is required.", param="behaviour")
    if body.get("durationSeconds") is None:
        raise ApiError("missing_field", "`durationSeconds` is required.", param="durationSeconds")
    behaviour = _behaviour(body["behaviour"], kind, "behaviour")
    duration = _number(body["durationSeconds"], "durationSeconds", positive=True)
    starts_in = _number(body.get("startsInSeconds", 0) or 0, "startsInSeconds")
    reason = body.get("declineReason")
    if reason is not None:
        reason = _reason(reason, kind, "declineReason")
    return IncidentRequest(behaviour, duration, starts_in, reason)


def _invalid(param: str, message: str, **details: Any) -> ApiError:
    return ApiError(
        "invalid_request",
        f"`{param}` {message}.",
        param=param,
        details={"issues": [{"path": param, "message": message}], **details},
    )


def _only(body: Any, allowed: tuple[str, ...], prefix: str) -> None:
    if not isinstance(body, dict):
        raise _invalid(prefix or "body", "must be an object")
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        name = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise _invalid(name, f"is not a field here (allowed: {', '.join(allowed)})")


def _behaviour(value: Any, kind: str, param: str) -> str:
    allowed = PAYOUT_BEHAVIOURS if kind == "payout" else PAYIN_BEHAVIOURS
    if value not in allowed:
        other = PAYIN_BEHAVIOURS if kind == "payout" else PAYOUT_BEHAVIOURS
        hint = (
            f"; {value!r} is a {'pay-in' if kind == 'payout' else 'payout'} behaviour"
            if (value in other)
            else ""
        )
        raise _invalid(
            param,
            f"must be one of {', '.join(allowed)} for a {kind} provider{hint}",
            allowed=list(allowed),
        )
    return str(value)


def _reason(value: Any, kind: str, param: str) -> str:
    allowed = PAYOUT_REJECT_REASONS if kind == "payout" else PAYIN_DECLINE_REASONS
    if value not in allowed:
        raise _invalid(param, f"must be one of {', '.join(allowed)}", allowed=list(allowed))
    return str(value)


def _number(value: Any, param: str, *, high: float | None = None, positive: bool = False) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _invalid(param, "must be a number")
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise _invalid(param, "must be a finite number")
    if positive and number <= 0:
        raise _invalid(param, "must be greater than 0")
    if number < 0:
        raise _invalid(param, "must not be negative")
    if high is not None and number > high:
        raise _invalid(param, f"must be between 0 and {high:g}")
    return number


def _callback_changes(value: Any, kind: str) -> dict[str, Any]:
    _only(value, CALLBACK_FIELDS, "callback")
    value = {k: v for k, v in value.items() if v is not None or k == "afterSeconds"}
    changes: dict[str, Any] = {}
    if "afterSeconds" in value:
        after = value["afterSeconds"]
        changes["afterSeconds"] = None if after is None else _number(after, "callback.afterSeconds")
    if "outcome" in value:
        outcomes = PAYOUT_CALLBACK_OUTCOMES if kind == "payout" else PAYIN_CALLBACK_OUTCOMES
        if value["outcome"] not in outcomes:
            raise _invalid(
                "callback.outcome",
                f"must be one of {', '.join(outcomes)} for a {kind} provider",
                allowed=list(outcomes),
            )
        changes["outcome"] = value["outcome"]
    if "mode" in value:
        if value["mode"] not in CALLBACK_MODES:
            raise _invalid(
                "callback.mode",
                f"must be one of {', '.join(CALLBACK_MODES)}",
                allowed=list(CALLBACK_MODES),
            )
        changes["mode"] = value["mode"]
    return changes
