"""The cascade trace: what the platform did for one payment or payout, on the simulated clock.

The spec keeps it out of the API ("Not exposed by the API: ... the internal cascade trace"); the
control plane shows it (`GET /_sim/payments/{id}/trace`, `GET /_sim/payouts/{id}/trace`) so an
integrator can see why a payment went where it went. One document per subject in the store's
`traces` table, appended to by the services in the unit of work of the change it records (the
handler or job has the store batch open; a rolled-back change leaves no entry).

Entries are `{at, kind, ...}`; `at` is simulated time (stored as epoch seconds, shown as ISO).
The kinds, and the fields each adds:

    created            payment: method, amount, currency, amountLocal, currencyLocal
                       payout: method, rail, amount, currency, debited
    routing_attempt    provider, outcome (accepted | unavailable | declined), reason?
    provider_chosen    provider, reason?
    callback_received  provider, outcome, source (provider | Sandbox-Simulate | provider_page)
    callback_ignored   provider, outcome, reason
    poll               provider, answer, result (applied | no_change)
    simulate           action
    status_changed     from, to, cause
    refund             claimId, amount, currency, amountUsd
    claim_resolved     claimId, claimKind, resolution
    dispatched         provider (payouts: the provider call)
    provider_answer    provider, accepted, providerRef?, failureReason?
    event_emitted      eventId, type
    chargeback         claimId, cause (the claim a chargeback opened; the status stays)
    delivery           eventId, deliveryId, webhookId, url, result (succeeded | failed | stored),
                       deliveryStatus; for a sent attempt also attempt (its number), trigger
                       (initial | retry | replay), httpStatus, error, nextAttemptAt

Bounded: at most `limit` entries per subject. Past it the first `head` entries stay (how the
subject began: creation, routing) and the oldest of the rest are dropped, so the newest stay too;
`truncated` counts the dropped ones (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Literal, TypedDict

from simulator.clock import isoformat
from simulator.domain.ports import Table

TRACE_HEAD = 100  # first entries always kept (the limit is Settings.trace_limit, 500)

Subject = Literal["payment", "payout"]


class TraceRecord(TypedDict):
    id: str
    subject: Subject
    merchantId: str
    environment: str
    entries: list[dict[str, Any]]
    truncated: int


def subject_of(subject_id: str) -> Subject:
    return "payment" if subject_id.startswith("TXN-") else "payout"


def event_subject(event: Mapping[str, Any]) -> str | None:
    """The payment or payout an event is about (None: a settlement, a withdrawal...)."""
    event_type: str = event["type"]
    data = event.get("data") or {}
    if event_type.startswith(("payment.", "chargeback.", "payout.")):
        subject = data.get("id")
    elif event_type.startswith("claim."):
        subject = data.get("transactionId")
    else:
        return None
    return subject if isinstance(subject, str) else None


class TraceLog:
    def __init__(
        self,
        table: Table[TraceRecord],
        now: Callable[[], float],
        *,
        limit: int,
        head: int = TRACE_HEAD,
    ) -> None:
        # A small limit (tests) keeps half of itself as the head.
        head = min(head, limit // 2)
        if head < 1:
            raise ValueError(f"a trace limit of {limit} keeps nothing")
        self._table = table
        self._now = now
        self.limit = limit
        self.head = head

    # -- writing ---------------------------------------------------------------------------------

    def record(
        self, owner: Mapping[str, Any], kind: str, *, at: float | None = None, **fields: Any
    ) -> None:
        """Append one entry to the trace of `owner` (a payment or payout record: its id,
        merchantId and environment)."""
        self.record_many(owner, [(kind, fields)], at=at)

    def record_many(
        self,
        owner: Mapping[str, Any],
        entries: list[tuple[str, dict[str, Any]]],
        *,
        at: float | None = None,
    ) -> None:
        """Several entries in one write (the creation of a payment: one store write, not one per
        routing attempt, to keep POST /payments as cheap as before)."""
        when = self._now() if at is None else at
        subject_id: str = owner["id"]
        doc = self._table.get(subject_id)
        if doc is None:
            doc = {
                "id": subject_id,
                "subject": subject_of(subject_id),
                "merchantId": owner["merchantId"],
                "environment": owner["environment"],
                "entries": [],
                "truncated": 0,
            }
        kept = doc["entries"]
        for kind, fields in entries:
            kept.append({"at": when, "kind": kind, **fields})
        over = len(kept) - self.limit
        if over > 0:
            del kept[self.head : self.head + over]
            doc["truncated"] += over
        self._table.put(subject_id, doc)

    def status_changed(self, owner: Mapping[str, Any], before: str, cause: str) -> None:
        self.record(owner, "status_changed", **{"from": before, "to": owner["status"]}, cause=cause)

    def on_event(self, event: Mapping[str, Any]) -> None:
        """Event-bus listener: each event about a payment or payout joins its trace, in the
        emitter's batch."""
        subject_id = event_subject(event)
        if subject_id is not None:
            self.record(
                {**event, "id": subject_id},
                "event_emitted",
                eventId=event["id"],
                type=event["type"],
            )

    # -- reading ---------------------------------------------------------------------------------

    def find(self, subject_id: str) -> TraceRecord | None:
        return self._table.get(subject_id)


def trace_view(
    owner: Mapping[str, Any],
    doc: TraceRecord | None,
    *,
    first: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The control plane's answer: `{id, subject, environment, truncated, entries}`, each entry's
    `at` in ISO 8601 (simulated time); `first`, entries derived rather than stored, go before
    the stored ones."""
    entries = (first or []) + ([] if doc is None else doc["entries"])
    return {
        "id": owner["id"],
        "subject": subject_of(owner["id"]),
        "environment": owner["environment"],
        "truncated": 0 if doc is None else doc["truncated"],
        "entries": [_entry_view(entry) for entry in entries],
    }


# Money is stored as exact text; answered as JSON numbers, like every amount of the API.
MONEY_FIELDS = ("amount", "amountLocal", "amountUsd")


def _entry_view(entry: dict[str, Any]) -> dict[str, Any]:
    view = {**entry, "at": isoformat(entry["at"])}
    for name in MONEY_FIELDS:
        if isinstance(view.get(name), str):
            view[name] = Decimal(view[name])
    return view
