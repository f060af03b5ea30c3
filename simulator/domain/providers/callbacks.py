"""Every callback a simulated provider sent about a pay-in or a payout, applied or ignored.

A provider's callback is a job on the simulated clock (`payment.provider_callback`,
`payout.provider_callback`). When it runs, the owning service decides (`accept_callback` in
payins/service.py and payouts/service.py, the one place each): a callback about a pending
pay-in (a processing payout) moves it; any other is ignored and kept here with the reason: the
second delivery of a duplicated callback, or a late one about a payment that already expired or
failed. Nothing it carries ever changes a terminal record. The cascade trace reads this log
(`for_object`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from simulator.domain.ports import Table
from simulator.domain.providers.world import ProviderWorld
from simulator.domain.trace import TraceLog

ObjectKind = Literal["payment", "payout"]


class CallbackContext(Protocol):
    """What a callback writes to: the record's trace, the callback log and the provider's counts
    (the domain context has all three)."""

    @property
    def trace(self) -> TraceLog: ...

    @property
    def callbacks(self) -> CallbackLog: ...

    @property
    def providers(self) -> ProviderWorld: ...


@dataclass(frozen=True, slots=True)
class CallbackVerdict:
    applied: bool
    # Why an ignored callback changed nothing: `duplicate` (the same outcome was already applied)
    # or `late` (the record had reached another terminal state first), `unknown_object`.
    reason: str | None = None


APPLIED = CallbackVerdict(True)


def judge(before: str | None, *, awaiting: str, reports: str) -> CallbackVerdict:
    """A callback reporting status `reports` about a record now `before` (None: no such
    record): applied only while the record is `awaiting` its provider."""
    if before is None:
        return CallbackVerdict(False, "unknown_object")
    if before == awaiting:
        return APPLIED
    return CallbackVerdict(False, "duplicate" if before == reports else "late")


@dataclass(frozen=True, slots=True)
class Callback:
    """One delivery of a provider's callback, as its job carries it."""

    kind: ObjectKind
    object_id: str
    provider_id: str | None
    outcome: str
    delivery: int

    def trace_received(self, ctx: CallbackContext, record: Any) -> None:
        ctx.trace.record(
            record,
            "callback_received",
            provider=self.provider_id,
            outcome=self.outcome,
            source="provider_callback",
            delivery=self.delivery,
        )

    def close(
        self, ctx: CallbackContext, record: Any, verdict: CallbackVerdict, before: str | None
    ) -> None:
        """After the owning service applied it or not: an ignored one in the record's trace,
        every one in the callback log and the provider's counts (in the caller's batch)."""
        if record is not None and not verdict.applied:
            ctx.trace.record(
                record,
                "callback_ignored",
                provider=self.provider_id,
                outcome=self.outcome,
                reason=f"{verdict.reason}: the {self.kind} is already {before}",
                delivery=self.delivery,
            )
        ctx.callbacks.record(
            self.kind,
            self.object_id,
            self.provider_id,
            self.outcome,
            self.delivery,
            verdict,
            before,
        )
        ctx.providers.callback_delivered(self.provider_id, applied=verdict.applied)
        ctx.providers.flush()


class CallbackLog:
    def __init__(self, table: Table[dict[str, Any]], now: Callable[[], float]) -> None:
        self._table = table
        self._now = now
        self._by_object: dict[str, list[str]] = {}
        for doc in table.scan():
            self._by_object.setdefault(doc["objectId"], []).append(doc["id"])

    def record(
        self,
        kind: ObjectKind,
        object_id: str,
        provider_id: str | None,
        outcome: str,
        delivery: int,
        verdict: CallbackVerdict,
        status_before: str | None,
    ) -> dict[str, Any]:
        ids = self._by_object.setdefault(object_id, [])
        doc: dict[str, Any] = {
            "id": f"{object_id}:cb{len(ids) + 1}",
            "objectKind": kind,
            "objectId": object_id,
            "providerId": provider_id,
            "at": self._now(),
            "outcome": outcome,
            "delivery": delivery,
            "applied": verdict.applied,
            "ignoredReason": verdict.reason,
            "statusBefore": status_before,
        }
        self._table.put(doc["id"], doc)
        ids.append(doc["id"])
        return doc

    def for_object(self, object_id: str) -> list[dict[str, Any]]:
        """The callbacks about one pay-in or payout, in the order they arrived."""
        return [
            doc
            for doc_id in self._by_object.get(object_id, [])
            if (doc := self._table.get(doc_id)) is not None
        ]

    def forget_write(self, doc_id: str, restored: Any) -> None:
        """A batch holding this record was rolled back: drop it from the index."""
        if restored is None:
            object_id = doc_id.rsplit(":cb", 1)[0]
            ids = self._by_object.get(object_id, [])
            if doc_id in ids:
                ids.remove(doc_id)
