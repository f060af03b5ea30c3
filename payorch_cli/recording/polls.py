"""Polls in a recording: a scenario step's `retry` marks its attempts from the second on
(`X-Payorch-Poll: N`, payorch_cli/client.py), so that the tools reading a recording take a poll
at its last read. `payorch drift` leaves the early reads out of the comparison; the scenario
`payorch proxy` writes folds them into the last read's step, as its `retry`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from payorch_cli.client import POLL_HEADER

POLL = POLL_HEADER.lower()  # as a recording keeps header names
POLLED_METHODS = frozenset({"GET", "HEAD"})


def with_next(records: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Each record with the one after it (None after the last), still one at a time."""
    previous: dict[str, Any] | None = None
    for record in records:
        if previous is not None:
            yield previous, record
        previous = record
    if previous is not None:
        yield previous, None


def repeated_by_poll(record: dict[str, Any], following: Any) -> bool:
    """Whether `record` is an early read of a poll: the next record is the next attempt of the
    same read (a scenario step's `retry` marks its attempts from the second on, POLL_HEADER),
    with an answer. The early reads saw the upstream mid-way (a delivery attempt not yet
    recorded, a payment not yet settled), an instant a replay, which waits for what is in
    flight, does not meet. Two reads in a row without the mark are two reads.
    """
    if not isinstance(following, dict) or following.get("kind") != "exchange":
        return False
    if record.get("kind") != "exchange" or not following.get("comparable", True):
        return False
    if following.get("response") is None:
        return False
    mine, again = record.get("request") or {}, following.get("request") or {}
    attempt = str((again.get("headers") or {}).get(POLL, ""))
    if not attempt.isdigit() or int(attempt) < 2 or mine.get("method") not in POLLED_METHODS:
        return False
    same = ("method", "path", "query")
    credential = (mine.get("headers") or {}).get("authorization")
    return all(mine.get(k) == again.get(k) for k in same) and credential == (
        again.get("headers") or {}
    ).get("authorization")
