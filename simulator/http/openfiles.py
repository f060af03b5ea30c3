"""The process's open files, shared between namespaces' worlds and connections (issue 31).

A loaded world holds `FDS_PER_WORLD` descriptors (its store's journal and lock), a connection one.
At the common default soft limit of 1,024 the old fixed cap of 1,000 worlds could not fit: a load
failed with EMFILE (a 500), and so did `accept`, which asyncio then logged at every retry. So at
start `payorch serve` raises its soft limit to the hard one (what any process may do for itself,
as nginx's `worker_rlimit_nofile` and systemd's services do), then splits what is left between
the worlds in memory (at most half) and the connections; past that a world is unloaded (or the
request is 503 if all are busy) and a connection gets 503 and is closed, never EMFILE.

asyncio's own answer to an `accept` failing with EMFILE logs the error with its traceback at
every attempt and, in 3.11, schedules a retry per attempt of its loop over the backlog (128), so
a burst of connections at the limit wrote ~150,000 lines in a second. `AcceptLog` keeps one line
per interval with a count.
"""

from __future__ import annotations

import logging
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

FDS_PER_WORLD = 2  # a world's store: its journal file and its lock file
# Descriptors kept for the rest: `default`'s store, the event loop, logs, outgoing webhook and
# provider sockets, saved states being written, the modules still to import.
RESERVE = 96
MIN_CONNECTIONS = 32
# Connections asyncio accepts in one go (its backlog) before those over the limit are closed.
ACCEPT_BURST = 128
ACCEPT_LOG_INTERVAL_SECONDS = 10.0
ACCEPT_EXHAUSTED = "socket.accept() out of system resource"


@dataclass(frozen=True, slots=True)
class Budget:
    limit: int  # the soft limit after raising it
    worlds: int  # namespaces in memory at most
    connections: int  # open client connections at most (0: no limit of ours)


def raise_soft_limit() -> int:
    """The soft open-files limit raised to the hard one (where it can be); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:  # a platform that refuses: keep the soft one
            log.warning("could not raise the open-files limit to %d: %s", hard, exc)
    return soft


def open_now() -> int:
    """Descriptors this process holds (Linux's /proc; elsewhere a guess)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 32


def budget(limit: int, in_use: int, worlds_wanted: int) -> Budget:
    """Worlds and connections within `limit` descriptors, `in_use` of them already taken."""
    if limit == resource.RLIM_INFINITY:
        return Budget(limit, worlds_wanted, 0)
    left = max(limit - in_use - RESERVE, 0)
    worlds = max(1, min(worlds_wanted, left // 2 // FDS_PER_WORLD))
    connections = max(MIN_CONNECTIONS, left - worlds * FDS_PER_WORLD - ACCEPT_BURST)
    return Budget(limit, worlds, connections)


class AcceptLog:
    """An event loop exception handler: `accept` out of descriptors is logged once per
    interval (with how many times it happened), everything else as asyncio would."""

    def __init__(
        self,
        interval: float = ACCEPT_LOG_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._last: float | None = None
        self._missed = 0

    def __call__(self, loop: Any, context: dict[str, Any]) -> None:
        if context.get("message") != ACCEPT_EXHAUSTED:
            loop.default_exception_handler(context)
            return
        now = self._clock()
        if self._last is not None and now - self._last < self.interval:
            self._missed += 1
            return
        error = context.get("exception")
        log.error(
            "cannot accept connections: %s (and %d more times since the last such line, at most "
            "one per %.0f s); the open-files limit is reached",
            getattr(error, "strerror", None) or error,
            self._missed,
            self.interval,
        )
        self._last, self._missed = now, 0
