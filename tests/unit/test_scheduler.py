"""The scheduler's `advance` when it is cut short (issue 14 item 9).

Graceful shutdown cancels a `POST /_sim/clock/advance` still running after the grace period (its
503 path). The clock is pinned to each job's due time while the job runs; a cancelled advance must
still release it, from the furthest point it reached, so that simulated time moves again and is
never behind the timestamps the jobs that ran have recorded.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from simulator.clock import SimClock
from simulator.scheduler import Scheduler
from simulator.store import Store


@pytest.mark.real_wall_clock
async def test_a_cancelled_advance_unpins_the_clock_at_the_job_it_reached() -> None:
    clock = SimClock()
    store = Store.memory()
    scheduler = Scheduler(clock, store.table("jobs"), store.batch)
    started = asyncio.Event()
    seen: list[float] = []

    async def stuck(payload: dict[str, Any]) -> None:
        seen.append(clock.timestamp())
        started.set()
        await asyncio.Event().wait()  # never set: only a cancellation ends it

    scheduler.register("stuck", stuck)
    scheduler.register("later", lambda payload: None)
    due = clock.timestamp() + 3600
    scheduler.schedule("stuck", due, {})
    scheduler.schedule("later", due + 86_400, {})

    advance = asyncio.create_task(scheduler.advance(10 * 86_400))
    await asyncio.wait_for(started.wait(), 5)
    advance.cancel()
    with pytest.raises(asyncio.CancelledError):
        await advance

    assert seen == [due]
    # Unpinned: simulated time runs with real time again ...
    before = clock.timestamp()
    await asyncio.sleep(0.02)
    assert clock.timestamp() > before
    # ... from the due time of the job that ran (what it recorded is not in the clock's future,
    # also after a restart, which keeps only the offset), and not past the job that never ran.
    assert clock.offset_seconds >= due - time.time()
    assert due <= clock.timestamp() < due + 86_400
    # The scheduler is usable again: the next advance runs the job that was left.
    await asyncio.wait_for(scheduler.advance(2 * 86_400), 5)
    assert scheduler.pending() == 0


def _slow_jobs(clock: SimClock, count: int) -> tuple[Scheduler, list[str]]:
    """A scheduler with `count` due jobs that each hold the loop longer than a tick's slice."""
    store = Store.memory()
    scheduler = Scheduler(clock, store.table("jobs"), store.batch)
    order: list[str] = []

    def slow(payload: dict[str, Any]) -> None:
        time.sleep(0.006)  # holds the loop, as a provider callback's completion does
        order.append("job")

    scheduler.register("slow", slow)
    for _ in range(count):
        scheduler.schedule("slow", clock.timestamp() - 1, {})
    return scheduler, order


async def _beside(order: list[str], work: Any) -> None:
    """Run `work` while another coroutine notes each turn the loop gives it."""
    finished = False

    async def request() -> None:
        while not finished:
            order.append("request")
            await asyncio.sleep(0)

    other = asyncio.create_task(request())
    await asyncio.sleep(0)  # its first turn
    await work
    finished = True
    await other


@pytest.mark.real_wall_clock
async def test_the_tick_lets_requests_in_between_due_jobs() -> None:
    """A burst of due jobs (a burst of production payments' callbacks, 30 s later) does not hold
    requests until the last has run: the tick gives the loop a turn between slices."""
    clock = SimClock()
    scheduler, order = _slow_jobs(clock, 5)
    await _beside(order, scheduler.run_due())
    jobs = [i for i, what in enumerate(order) if what == "job"]
    assert len(jobs) == 5
    # A request turn between every two jobs: each job alone outlasts a slice.
    assert all("request" in order[a:b] for a, b in itertools.pairwise(jobs))


@pytest.mark.real_wall_clock
async def test_an_advance_runs_its_jobs_with_nothing_in_between() -> None:
    """A clock advance pins the clock to each job's due time: no request may run in between."""
    clock = SimClock()
    scheduler, order = _slow_jobs(clock, 5)
    await _beside(order, scheduler.advance(1))
    jobs = [i for i, what in enumerate(order) if what == "job"]
    assert jobs == list(range(jobs[0], jobs[0] + 5))
