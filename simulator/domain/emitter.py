"""Publishing the pay-in side's events: each carries its object as its GET endpoint returns it.

One emitter per app, held by the domain context, shared by the payment and refund services, so
an event's payload is rendered in one place whichever service fires it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from simulator.domain.ports import Events
from simulator.domain.views import claim_view, transaction_view

if TYPE_CHECKING:
    from simulator.domain.records import ClaimRecord, TransactionRecord


class Emitter:
    def __init__(
        self, events: Events, now: Callable[[], float], public_url: Callable[[], str]
    ) -> None:
        self._events = events
        self._now = now
        # Read at each event: `serve --port 0` learns its port (and sets the context's
        # public_url) only after the app is built.
        self._public_url = public_url

    # `at`: the instant of the transition that fires the event. A transition's events share it,
    # so that their `createdAt` never puts one before another (the clock flows between emits).
    def transaction(
        self, tx: TransactionRecord, event_type: str, *, at: float | None = None
    ) -> None:
        at = self._now() if at is None else at
        view = transaction_view(tx, self._public_url(), at)
        self._events.emit(tx["merchantId"], tx["environment"], event_type, view, at=at)

    def claim(self, claim: ClaimRecord, event_type: str, *, at: float | None = None) -> None:
        self._events.emit(
            claim["merchantId"], claim["environment"], event_type, claim_view(claim), at=at
        )

    def about(
        self,
        event_type: str,
        tx: TransactionRecord,
        claim: ClaimRecord | None = None,
        *,
        at: float | None = None,
    ) -> None:
        """An event of a transition: `claim.*` events carry the claim, the others the payment."""
        if event_type.startswith("claim."):
            if claim is None:
                raise ValueError(f"{event_type} needs the claim the transition opened")
            self.claim(claim, event_type, at=at)
        else:
            self.transaction(tx, event_type, at=at)
