"""Transition coverage: which rows of the spec's state tables, which event types and which error
codes this server has produced since it started or was last reset (GET /_sim/coverage).

The universe is data here: the rows of the spec's tables (transaction, simulate, checkout
session, payout, deposit account, refund and claim), the event catalogue (`EVENT_TYPES`) and the
error catalogue (`CATALOGUE`). What reached them is counted by one call per transition, made
where the transition happens (`reach(KEY)`), by the event bus (`on_event`) and by the one error
renderer (`error`). In memory: a counter increment on the request path, nothing stored; the
composition root makes a new one with the world, so a reset starts it again.

Each count is its merchant's: a transition's and an event's are the merchant of the object, an
error's the merchant that owns the request (simulator/domain/requestlog.py says which), and a
caller's report sums its own merchant's counts only (an error nobody owns is nobody's). Counts made
while answering a request of one of payorch's own tools (`TOOL_OF_REQUEST`, set from the request's
`X-Payorch-Tool`) are kept apart and reported only when asked for (`include_tools`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from payorch.vocabulary import EVENT_TYPES
from simulator.domain.errors import CATALOGUE

if TYPE_CHECKING:
    from simulator.domain.records import EventRecord

# The payorch tool whose request is being answered (None: anyone else's, or no request). Set by
# the request middleware only when the request carries the tag.
TOOL_OF_REQUEST: ContextVar[str | None] = ContextVar("tool_of_request", default=None)

# Whose counts: the owning merchant (None: nobody's) and whether a payorch tool's request made them.
CountsOwner = tuple[str | None, bool]
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Row:
    key: str  # what the transition's code passes to `Coverage.reach`
    table: str
    from_: str  # "(none)" for a creation
    to: str
    via: str  # the trigger, in the spec's words


# The tables' rows, in the spec's order. `transaction` holds the rows driven by the API and the
# provider, `simulate` the sandbox simulate rows (the spec's one table, split as its triggers
# are). Rows marked "decision" are ours where the spec says "not shown" (docs/decisions.md).
ROWS: tuple[Row, ...] = (
    Row("transaction.create", "transaction", "(none)", "pending", "POST /payments"),
    Row(
        "transaction.provider_paid",
        "transaction",
        "pending",
        "completed",
        "provider confirmation or reconciliation poll: confirmed",
    ),
    Row(
        "transaction.provider_failed",
        "transaction",
        "pending",
        "failed",
        "provider confirmation or reconciliation poll: failed",
    ),
    Row(
        "transaction.deadline",
        "transaction",
        "pending",
        "expired",
        "payment deadline passes unpaid (voucher/PIX abandoned; decision)",
    ),
    Row(
        "transaction.refund_full",
        "transaction",
        "completed",
        "refunded",
        "POST /payments/{id}/refund for what remains (decision)",
    ),
    Row("simulate.paid", "simulate", "pending", "completed", "simulate paid"),
    Row("simulate.failed", "simulate", "pending", "failed", "simulate failed"),
    Row("simulate.expired", "simulate", "pending", "expired", "simulate expired"),
    Row("simulate.refunded", "simulate", "completed", "refunded", "simulate refunded"),
    Row("simulate.chargeback", "simulate", "completed", "completed", "simulate chargeback"),
    Row(
        "checkout.create",
        "checkout_session",
        "(none)",
        "awaiting_method",
        "POST /checkout/sessions without paymentMethodId",
    ),
    Row(
        "checkout.select",
        "checkout_session",
        "awaiting_method",
        "completed",
        "POST /checkout/sessions/{token}/select",
    ),
    Row(
        "checkout.one_shot",
        "checkout_session",
        "(none)",
        "pending (transaction)",
        "POST /checkout/sessions with paymentMethodId",
    ),
    Row("payout.send", "payout", "(none)", "processing", "POST /me/payout/send, accepted"),
    Row(
        "payout.send_rejected",
        "payout",
        "(none)",
        "(not kept: 422)",
        "POST /me/payout/send, provider rejects the beneficiary",
    ),
    Row(
        "payout.provider_completed",
        "payout",
        "processing",
        "completed",
        "provider: paid (production)",
    ),
    Row(
        "payout.provider_failed",
        "payout",
        "processing",
        "failed",
        "provider: rejected or refunded (production)",
    ),
    Row("payout.simulate_completed", "payout", "processing", "completed", "simulate completed"),
    Row("payout.simulate_failed", "payout", "processing", "failed", "simulate failed"),
    Row("payout.simulate_processing", "payout", "processing", "processing", "simulate processing"),
    Row(
        "deposit_account.create", "deposit_account", "(none)", "active", "POST /me/deposit-accounts"
    ),
    Row(
        "deposit_account.disable",
        "deposit_account",
        "active",
        "disabled",
        "operator support action (POST /_sim/deposit-accounts/{id}/disable)",
    ),
    Row("claim.refund", "refund_claim", "(none)", "pending", "POST /payments/{id}/refund"),
    Row("claim.chargeback", "refund_claim", "(none)", "pending", "simulate chargeback"),
    Row(
        "claim.resolve_refund",
        "refund_claim",
        "pending",
        "resolved",
        "refund claim resolves, 1 h later (decision)",
    ),
    Row(
        "claim.resolve_chargeback",
        "refund_claim",
        "pending",
        "resolved",
        "chargeback claim resolves (decision)",
    ),
)
ROW_KEYS = frozenset(row.key for row in ROWS)


class Coverage:
    """The counters, per scope. `reach`, `on_event` and `error` are the hooks: each a dict look-up
    and one increment."""

    def __init__(self, since: float = 0.0) -> None:
        self.since = since
        self._rows: dict[CountsOwner, Counter[str]] = {}
        self._events: dict[CountsOwner, Counter[str]] = {}
        self._errors: dict[CountsOwner, Counter[tuple[str, int]]] = {}

    def reach(self, key: str, record: Mapping[str, Any]) -> None:
        """`record` (the payment, payout, claim, session or account) names the merchant."""
        _counter(self._rows, record.get("merchantId"))[key] += 1

    def on_event(self, envelope: EventRecord) -> None:
        _counter(self._events, envelope.get("merchantId"))[envelope["type"]] += 1

    def error(self, code: str, status: int, merchant_id: str | None) -> None:
        _counter(self._errors, merchant_id)[code, status] += 1

    def counts(
        self, merchant_id: str, include_tools: bool = False
    ) -> tuple[Counter[str], Counter[str], Counter[tuple[str, int]]]:
        """The merchant's rows, events and errors (with its tools' requests' counts if asked)."""
        scopes: list[CountsOwner] = [(merchant_id, False)]
        if include_tools:
            scopes.append((merchant_id, True))
        return (
            _sum(self._rows, scopes),
            _sum(self._events, scopes),
            _sum(self._errors, scopes),
        )

    def report(self, since: str, merchant_id: str, include_tools: bool = False) -> dict[str, Any]:
        """GET /_sim/coverage's body for one merchant: every row, event type and error code with
        its count."""
        rows, events_reached, errors_reached = self.counts(merchant_id, include_tools)
        tables: dict[str, list[dict[str, Any]]] = {}
        for row in ROWS:
            tables.setdefault(row.table, []).append(
                {
                    "key": row.key,
                    "from": row.from_,
                    "to": row.to,
                    "via": row.via,
                    "reached": rows[row.key],
                }
            )
        events = [{"type": name, "reached": events_reached[name]} for name in EVENT_TYPES]
        # Each code at its default status, and at any other status it was answered with.
        statuses = {(code, spec.status) for code, spec in CATALOGUE.items()} | set(errors_reached)
        errors = [
            {"code": code, "status": status, "reached": errors_reached[code, status]}
            for code, status in sorted(statuses)
        ]
        parts = {
            "stateRows": [r["reached"] for rows in tables.values() for r in rows],
            "events": [e["reached"] for e in events],
            "errors": [e["reached"] for e in errors],
        }
        totals = {name: _total(counts) for name, counts in parts.items()}
        return {
            "since": since,
            "stateTables": [{"table": name, "rows": rows} for name, rows in tables.items()],
            "events": events,
            "errors": errors,
            "totals": totals,
        }


def _counter(table: dict[CountsOwner, Counter[K]], merchant_id: str | None) -> Counter[K]:
    scope = (merchant_id, TOOL_OF_REQUEST.get() is not None)
    counter = table.get(scope)
    if counter is None:
        counter = table[scope] = Counter()
    return counter


def _sum(table: dict[CountsOwner, Counter[K]], scopes: list[CountsOwner]) -> Counter[K]:
    total: Counter[K] = Counter()
    for scope in scopes:
        total.update(table.get(scope, Counter()))
    return total


def _total(counts: list[int]) -> dict[str, Any]:
    reached = sum(1 for n in counts if n)
    percent = round(100 * reached / len(counts), 1) if counts else 100.0
    return {"reached": reached, "total": len(counts), "percent": percent}
