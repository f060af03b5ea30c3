"""The collaborators every domain service shares, wired once by the composition root."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simulator.domain.catalog import Catalog
from simulator.domain.coverage import Coverage
from simulator.domain.emitter import Emitter
from simulator.domain.fx import Fx
from simulator.domain.ledger import Ledger
from simulator.domain.ports import Events, Jobs, Table
from simulator.domain.providers.callbacks import CallbackLog
from simulator.domain.providers.world import ProviderWorld
from simulator.domain.trace import TraceLog
from simulator.domain.transactions import TransactionRepository

if TYPE_CHECKING:
    from simulator.domain.records import ClaimRecord


@dataclass(slots=True)
class DomainContext:
    catalog: Catalog
    fx: Fx
    transactions: TransactionRepository
    claims: Table[ClaimRecord]
    ledger: Ledger
    jobs: Jobs
    events: Events
    now: Callable[[], float]
    # The internal cascade trace of each payment and payout (control plane only).
    trace: TraceLog
    # The simulated providers' live behaviour, and every callback they sent.
    providers: ProviderWorld
    callbacks: CallbackLog
    rng: random.Random = field(default_factory=random.Random)
    # Absolute base of links inside event payloads (API responses use the request's own origin).
    public_url: str = "http://127.0.0.1:8080"
    # What this world's transitions, events and errors reached (GET /_sim/coverage).
    coverage: Coverage = field(default_factory=Coverage)
    # Made from the fields above: the one place pay-in and claim events are rendered and sent.
    emitter: Emitter = field(init=False)

    def __post_init__(self) -> None:
        self.emitter = Emitter(self.events, self.now, lambda: self.public_url)
