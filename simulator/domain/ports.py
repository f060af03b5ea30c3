"""What the domain needs from the outside world, as protocols (the store and bus implement them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from simulator.domain.records import EventEnvelope

# The record a table holds (a TypedDict of simulator.domain.records); a bare `Table` holds Any.
R = TypeVar("R")


class Table(Protocol[R]):
    def get(self, doc_id: str) -> R | None: ...
    def put(self, doc_id: str, doc: R) -> None: ...
    def delete(self, doc_id: str) -> None: ...
    def values(self) -> Iterable[R]: ...
    # A copy of each document, decoded as the iteration reaches it (an index built at start-up
    # keeps a little of each; the documents never all exist at once).
    def scan(self) -> Iterator[R]: ...


class Jobs(Protocol):
    """The scheduler, as the domain sees it."""

    def schedule(
        self, kind: str, due_at: float, payload: dict[str, Any], *, job_id: str | None = None
    ) -> str: ...

    def cancel(self, job_id: str) -> None: ...


class Events(Protocol):
    """The event bus, as the domain sees it."""

    def emit(
        self,
        merchant_id: str,
        environment: str,
        event_type: str,
        data: dict[str, Any],
        *,
        at: float | None = None,
    ) -> EventEnvelope: ...
