"""What the domain needs from the outside world, as protocols (the store and bus implement them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol


class Table(Protocol):
    def get(self, doc_id: str) -> dict[str, Any] | None: ...
    def put(self, doc_id: str, doc: dict[str, Any]) -> None: ...
    def delete(self, doc_id: str) -> None: ...
    def values(self) -> Iterable[dict[str, Any]]: ...
    # A copy of each document, decoded as the iteration reaches it (an index built at start-up
    # keeps a little of each; the documents never all exist at once).
    def scan(self) -> Iterator[dict[str, Any]]: ...


class Jobs(Protocol):
    """The scheduler, as the domain sees it."""

    def schedule(
        self, kind: str, due_at: float, payload: dict[str, Any], *, job_id: str | None = None
    ) -> str: ...

    def cancel(self, job_id: str) -> None: ...


class Events(Protocol):
    """The event bus, as the domain sees it."""

    def emit(
        self, merchant_id: str, environment: str, event_type: str, data: dict[str, Any]
    ) -> dict[str, Any]: ...
