"""What the MCP server offers, as data: each tool's name, one-line description and whether it
changes anything (`TOOLS`; `--read-only` offers `READ_ONLY`), the argument types their input
schemas are built from (pydantic `Field`s: types, bounds, patterns, enums), and the `Result` a tool
answers with. The tools themselves are `Toolbox`'s methods (`tools.py`). docs/decisions.md says
why this set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from payorch.vocabulary import PROVIDER_BEHAVIOURS, PROVIDER_BEHAVIOURS_BY_KIND
from payorch_cli.mcp.sandbox import Environment
from simulator.domain.catalog import PAYIN_DECLINE_REASONS

PaymentId = Annotated[
    str, Field(description="A payment's transaction id.", pattern=r"^TXN-[A-Za-z0-9]+$")
]
PayoutId = Annotated[str, Field(description="A payout's id.", pattern=r"^po_[A-Za-z0-9]+$")]
ProviderId = Annotated[
    str,
    Field(
        description="A provider id (prv_...); sandbox_status lists them.",
        pattern=r"^prv_[a-z0-9_]+$",
    ),
]
StateName = Annotated[
    str,
    Field(
        description="1 to 64 characters from A-Z a-z 0-9 . _ -, not starting with a dot.",
        pattern=r"^[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,63}$",
    ),
]
EnvironmentArg = Annotated[
    Environment,
    Field(
        description="sandbox (simulated outcomes) or production (the provider cascade runs, "
        "with the same shop's production key)."
    ),
]
FindEnvironment = Annotated[
    Environment | None,
    Field(description="Where the payment lives; omitted: sandbox, then production."),
]
# The vocabulary's behaviours and the catalogue's decline reasons, not a copy of them (pydantic
# reads the Literal at run time; mypy takes a literal only, so it sees the plain strings).
if TYPE_CHECKING:
    Behaviour = str
    DeclineReason = str
else:
    Behaviour = Literal[PROVIDER_BEHAVIOURS]
    DeclineReason = Literal[PAYIN_DECLINE_REASONS]
BEHAVIOURS_HELP = "; ".join(
    f"{kind}: {', '.join(behaviours)}" for kind, behaviours in PROVIDER_BEHAVIOURS_BY_KIND.items()
)
PaymentStatus = Literal["pending", "completed", "failed", "refunded", "expired", "chargeback"]


@dataclass(frozen=True, slots=True)
class Result:
    text: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    read_only: bool
    destructive: bool = False  # replaces or deletes what exists (reset, restore)


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def result(headline: str, data: dict[str, Any]) -> Result:
    return Result(f"{headline}\n{as_json(data)}", data)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "create_payment",
        "Create a payment (POST /payments) in sandbox, or in production to run the cascade.",
        False,
    ),
    ToolSpec("get_payment", "Get one payment by its TXN- id (GET /payments/{id}).", True),
    ToolSpec("list_payments", "List payments, newest first, with optional filters.", True),
    ToolSpec("refund_payment", "Refund a completed payment, fully or in part.", False),
    ToolSpec(
        "simulate_payment",
        "Drive a sandbox payment's outcome: paid, failed, expired, refunded or chargeback.",
        False,
    ),
    ToolSpec(
        "simulate_payout",
        "Drive a sandbox payout's outcome: completed, failed, rejected, refunded, returned...",
        False,
    ),
    ToolSpec(
        "advance_clock",
        "Move the simulated clock forward, running every job that falls due (callbacks, "
        "retries, expiries).",
        False,
    ),
    ToolSpec(
        "script_provider",
        "Change how a provider behaves in production from now on (behaviour, declines, latency, "
        "callbacks).",
        False,
    ),
    ToolSpec(
        "start_incident",
        "Give a provider a behaviour (e.g. outage) for a window of simulated time.",
        False,
    ),
    ToolSpec("end_incident", "End a provider's incidents now (one, or all of them).", False),
    ToolSpec(
        "explain_payment",
        "Explain a payment or payout: its cascade trace and the requests and events around it.",
        True,
    ),
    ToolSpec(
        "recent_requests",
        "The newest requests of the request log (status, error code, request id), errors "
        "only if asked.",
        True,
    ),
    ToolSpec(
        "webhook_deliveries",
        "Recent webhook deliveries of this merchant's subscriptions, with their results.",
        True,
    ),
    ToolSpec(
        "reset_sandbox",
        "Put the sandbox back to its fixtures: data, providers, request log, clock.",
        False,
        destructive=True,
    ),
    ToolSpec("save_state", "Save the whole sandbox and its clock under a name.", False),
    ToolSpec(
        "restore_state",
        "Put the sandbox back to a saved state (what happened since is gone).",
        False,
        destructive=True,
    ),
    ToolSpec(
        "sandbox_status",
        "The sandbox at a glance: URL, simulated clock, providers and incidents, saved states.",
        True,
    ),
    ToolSpec(
        "record_scenario",
        "Write the session's requests as a runnable scenario (YAML), ids saved and reused.",
        True,
    ),
    ToolSpec(
        "run_scenario",
        "Run a scenario (YAML text or a file path) against the sandbox; pass/fail per step.",
        False,
    ),
    ToolSpec(
        "coverage",
        "Which state transitions, events and error codes the sandbox has produced so far.",
        True,
    ),
)

READ_ONLY = frozenset(spec.name for spec in TOOLS if spec.read_only)
