"""The webhook delivery engine: build (pure) -> sign (pure) -> send (I/O) -> record every attempt.

Asynchronous by construction: the bus listener only records `dlv_...` documents (inside the
emitter's batch, so they commit or roll back with the state change) and puts their ids on a
queue. A dispatcher takes them off and starts one task per attempt; the shared client session
caps connections per host, so a slow endpoint queues behind itself and not in front of others.

Retries are scheduler jobs on the simulated clock (persisted: they survive a restart). A retry
job waits for its attempt, up to `retry_wait` real seconds, so that `clock/advance` walks a
fast endpoint's whole schedule deterministically, with each attempt stamped at its due time;
an endpoint that was slow last time gets no wait, so a hanging one cannot stall other jobs.
At start, pending deliveries with no retry job waiting (in flight at a crash) are re-queued.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from simulator.clock import SimClock
from simulator.domain.deliveries import (
    RESPONSE_KEPT,
    AttemptPlan,
    AttemptResult,
    DeliveryService,
)
from simulator.domain.webhooks import is_loopback
from simulator.events.signing import SIGNATURE_HEADER, delivery_headers

log = logging.getLogger(__name__)

ATTEMPT_TIMEOUT_SECONDS = 10.0  # design.md 2.3: a 2xx within 10 s is success
RETRY_WAIT_SECONDS = 2.0
CONNECTIONS_PER_HOST = 16
CONNECTIONS_TOTAL = 256

Batch = Callable[[], AbstractContextManager[Any]]


class _NotSent(Exception):
    """An attempt the server chose not to make (recorded like any failed attempt)."""


class DeliveryEngine:
    def __init__(
        self,
        deliveries: DeliveryService,
        clock: SimClock,
        batch: Batch,
        job_exists: Callable[[str], bool],
        *,
        timeout: float = ATTEMPT_TIMEOUT_SECONDS,
        retry_wait: float = RETRY_WAIT_SECONDS,
        wall: Callable[[], float] = time.time,
        loopback_only: bool = False,
    ) -> None:
        self._deliveries = deliveries
        self._clock = clock
        self._batch = batch
        self._job_exists = job_exists
        self.timeout = timeout
        self._retry_wait = retry_wait
        self._wall = wall
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_flight: set[str] = set()  # automatic attempts: never two at once per delivery
        self._slow: set[str] = set()  # webhook ids whose last attempt outlasted retry_wait
        self._session: aiohttp.ClientSession | None = None
        self._loopback_only = loopback_only

    # -- wiring ----------------------------------------------------------------------------------

    def on_event(self, event: dict[str, Any]) -> None:
        """Bus listener: record deliveries now, send them later (never blocks the emitter)."""
        for delivery_id in self._deliveries.on_event(event):
            self._queue.put_nowait(delivery_id)

    async def on_retry_job(self, payload: dict[str, Any]) -> None:
        delivery_id = payload["deliveryId"]
        delivery = self._deliveries.find(delivery_id)
        task = self._spawn(self._attempt(delivery_id))
        if delivery is not None and delivery["webhookId"] not in self._slow:
            await asyncio.wait({task}, timeout=self._retry_wait)

    async def replay(self, delivery_id: str) -> dict[str, Any] | None:
        """One more attempt, freshly signed; answers once it is recorded (bounded by timeout)."""
        return await self._attempt(delivery_id, replay=True)

    async def lifecycle(self, _app: Any) -> AsyncIterator[None]:
        """aiohttp cleanup_ctx: the client session, the dispatcher, re-queueing after a crash."""
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=CONNECTIONS_TOTAL, limit_per_host=CONNECTIONS_PER_HOST
            ),
        )
        dispatcher = asyncio.create_task(self._dispatch())
        for delivery_id in self._deliveries.unfinished(self._job_exists):
            self._queue.put_nowait(delivery_id)
        try:
            yield
        finally:
            dispatcher.cancel()
            # An attempt cut short here was not recorded: its delivery stays pending and is
            # re-queued at the next start (at least once).
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(dispatcher, *self._tasks, return_exceptions=True)
            await self._session.close()
            self._session = None

    async def drain(self) -> None:
        """Wait until nothing is queued or in flight (tests and benchmarks)."""
        while self._queue.qsize() or self._tasks:
            await asyncio.sleep(0.005)

    # -- internals -------------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("webhook attempt failed unexpectedly", exc_info=task.exception())

    async def _dispatch(self) -> None:
        while True:
            delivery_id = await self._queue.get()
            self._spawn(self._attempt(delivery_id))

    async def _attempt(self, delivery_id: str, *, replay: bool = False) -> dict[str, Any] | None:
        if not replay:
            if delivery_id in self._in_flight:
                return None
            self._in_flight.add(delivery_id)
        try:
            with self._batch():
                plan = self._deliveries.plan(delivery_id, replay=replay)
            if plan is None:
                return self._deliveries.find(delivery_id)
            result = await self._send(plan)
            with self._batch():
                return self._deliveries.record(plan, result)
        finally:
            if not replay:
                self._in_flight.discard(delivery_id)

    async def _send(self, plan: AttemptPlan) -> AttemptResult:
        at = self._clock.timestamp()
        sent_at = self._wall()
        timestamp = max(int(sent_at), plan.min_timestamp)
        headers = delivery_headers(
            plan.body,
            event_type=plan.event_type,
            delivery_id=plan.delivery_id,
            timestamp=timestamp,
            secret=plan.secret,
            previous_secret=plan.previous_secret,
        )
        status: int | None = None
        error: str | None = None
        text: str | None = None
        assert self._session is not None, "the engine is not started"
        started = time.perf_counter()
        host = urlsplit(plan.url).hostname or ""
        try:
            if self._loopback_only and not is_loopback(host):
                raise _NotSent(f"not sent: {host} is not a loopback host (loopback-only server)")
            async with self._session.post(
                plan.url,
                data=plan.body,
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            ) as response:
                status = response.status
                raw = await response.content.read(RESPONSE_KEPT * 4)
                text = raw.decode("utf-8", "replace")
        except TimeoutError:
            status, error = None, f"timeout: no answer within {self.timeout:g} s"
        except _NotSent as exc:
            status, error = None, str(exc)
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            status, error = None, f"{type(exc).__name__}: {exc}".rstrip(": ")
        duration_ms = (time.perf_counter() - started) * 1000
        if duration_ms > self._retry_wait * 1000:
            self._slow.add(plan.webhook_id)
        else:
            self._slow.discard(plan.webhook_id)
        return AttemptResult(
            trigger=plan.trigger,
            at=at,
            sent_at=sent_at,
            timestamp=timestamp,
            http_status=status,
            duration_ms=duration_ms,
            error=error,
            response_body=text,
            signature=headers[SIGNATURE_HEADER],
        )
