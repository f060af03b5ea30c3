"""The one job scheduler, keyed on simulated time.

Jobs are persisted (a restart keeps pending retries, deadlines and provider callbacks) and run in
(due time, creation order). A background tick runs what falls due in real time; `advance` runs what
falls due on the way, in order, with the clock pinned to each job's due time.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from simulator.clock import SimClock

log = logging.getLogger(__name__)

#: Job ids made at a time: "job_" and 16 hex digits from the OS's CSPRNG, as `secrets.token_hex(8)`.
_IDS_PER_DRAW = 256
# The background tick runs due jobs for at most this long (wall time) before it lets the event
# loop answer requests in between: 30 s after a burst of production payments, their provider
# callbacks all come due, and running thousands of completions in one go held every request
# for seconds (docs/performance.md, "Due jobs in slices").
_TICK_SLICE_SECONDS = 0.004


def _draw_job_ids() -> list[str]:
    """The next job ids, made in C: hex digits of random bytes, grouped by 16 with a separator
    that becomes each id's prefix (a job id per scheduled job cost a call chain down to a slice
    of a random buffer, then a hex and an f-string)."""
    digits = os.urandom(8 * _IDS_PER_DRAW).hex(" ", 8)
    return ("job_" + digits.replace(" ", " job_")).split(" ")


_heappush = heapq.heappush

JobHandler = Callable[[dict[str, Any]], Awaitable[None] | None]


class JobTable(Protocol):
    def get(self, doc_id: str) -> dict[str, Any] | None: ...
    def put(self, doc_id: str, doc: dict[str, Any]) -> None: ...
    def delete(self, doc_id: str) -> None: ...
    def values(self) -> Any: ...


class Scheduler:
    def __init__(
        self,
        clock: SimClock,
        jobs: JobTable,
        batch: Callable[[], AbstractContextManager[Any]] = nullcontext,
    ) -> None:
        self._clock = clock
        self._jobs = jobs
        self._batch = batch
        self._handlers: dict[str, JobHandler] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._lock = asyncio.Lock()
        self._job_ids: Iterator[str] = iter(())
        stored = sorted(jobs.values(), key=lambda j: (j["dueAt"], j.get("seq", 0)))
        # Continue after the highest persisted seq: restarting from 0 would give new jobs the
        # numbers of jobs already stored, and a later restart would run equal-time jobs out of
        # creation order.
        self._seq = itertools.count(max((j.get("seq", 0) for j in stored), default=-1) + 1)
        for job in stored:
            heapq.heappush(self._heap, (job["dueAt"], job.get("seq", 0), job["id"]))

    def register(self, kind: str, handler: JobHandler) -> None:
        self._handlers[kind] = handler

    def schedule(
        self, kind: str, due_at: float, payload: dict[str, Any], *, job_id: str | None = None
    ) -> str:
        if not job_id:
            job_id = next(self._job_ids, None)
            if job_id is None:
                self._job_ids = iter(_draw_job_ids())
                job_id = next(self._job_ids)
        seq = next(self._seq)
        self._jobs.put(
            job_id, {"id": job_id, "kind": kind, "dueAt": due_at, "seq": seq, "payload": payload}
        )
        _heappush(self._heap, (due_at, seq, job_id))
        return job_id

    def cancel(self, job_id: str) -> None:
        # The heap entry is dropped lazily when it surfaces.
        if self._jobs.get(job_id) is not None:
            self._jobs.delete(job_id)

    def pending(self) -> int:
        return sum(1 for _ in self._jobs.values())

    def next_due(self) -> float | None:
        self._drop_cancelled()
        return self._heap[0][0] if self._heap else None

    async def run_due(self) -> int:
        """Run every job due at the current simulated time; returns how many ran."""
        async with self._lock:
            return await self._run_until(self._clock.timestamp(), pin=False)

    async def advance(self, seconds: float) -> None:
        async with self._lock:
            target = self._clock.timestamp() + seconds
            reached = False
            try:
                await self._run_until(target, pin=True)
                reached = True
            finally:
                # Cut short (shutdown cancels an advance still running after its grace period):
                # continue from the due time of the last job started (the pinned time), so time
                # moves again and is never behind what that job recorded, nor past jobs not run.
                self._clock.release(target if reached else self._clock.timestamp())

    async def run_forever(self, interval: float = 0.2) -> None:
        while True:
            try:
                await self.run_due()
            except Exception:  # a broken job must not stop the clock
                log.exception("scheduler tick failed")
            await asyncio.sleep(interval)

    def _drop_cancelled(self) -> None:
        while self._heap and self._jobs.get(self._heap[0][2]) is None:
            heapq.heappop(self._heap)

    async def _run_until(self, limit: float, *, pin: bool) -> int:
        """Run the jobs due by `limit`, in due order. Pinned (a clock advance), the clock stands
        at each job's due time, so nothing else may run in between; unpinned (the tick), the
        loop gets a turn every `_TICK_SLICE_SECONDS`, the way a job that awaits gives it one."""
        ran = 0
        slice_ends = time.perf_counter() + _TICK_SLICE_SECONDS
        while True:
            self._drop_cancelled()
            if not self._heap or self._heap[0][0] > limit:
                return ran
            due_at, _, job_id = heapq.heappop(self._heap)
            job = self._jobs.get(job_id)
            if job is None:
                continue
            if pin:
                self._clock.pin(due_at)
            await self._run(job)
            ran += 1
            if not pin and time.perf_counter() > slice_ends:
                await asyncio.sleep(0)
                slice_ends = time.perf_counter() + _TICK_SLICE_SECONDS

    async def _run(self, job: dict[str, Any]) -> None:
        handler = self._handlers.get(job["kind"])
        try:
            if handler is None:
                log.error("no handler for job kind %s; dropping %s", job["kind"], job["id"])
                self._jobs.delete(job["id"])
                return
            with self._batch():
                self._jobs.delete(job["id"])
                outcome = handler(job["payload"])
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            # The failed job's own writes were rolled back with its batch; drop the job itself so
            # it neither blocks the queue nor re-runs (and fails again) after every restart.
            log.exception("job %s (%s) failed; dropped", job["id"], job["kind"])
            if self._jobs.get(job["id"]) is not None:
                self._jobs.delete(job["id"])
