"""The webhook delivery engine: build (pure) -> sign (pure) -> send (I/O) -> record every attempt.

Asynchronous by construction: the bus listener only records `dlv_...` documents (inside the
emitter's batch, so they commit or roll back with the state change) and queues their ids in the
lane of their endpoint's host, oldest first. Each lane is sent by at most CONNECTIONS_PER_HOST
workers, as many as the shared client session keeps connections to that host: a slow endpoint
queues behind itself and not in front of others, and a delivery is planned, signed and timed
only when a connection is there for it (its 10 s start when it is sent, not while it queues).

Retries are scheduler jobs on the simulated clock (persisted: they survive a restart). Each
attempt is stamped with its job's due time and its outcome recorded when it completes, the next
retry due from that time. The clock never waits on a receiver's network: only while
`clock/advance` walks the clock (`walking_the_clock`), and only for a receiver on this machine
(a loopback URL: tests, a local dev server), does a retry job wait for its attempt, up to
`retry_wait` real seconds and `ADVANCE_WAIT_SECONDS` in all, so that one advance walks a fast
local endpoint's whole schedule deterministically; an endpoint that was slow last time gets no
wait, so a hanging one cannot stall other jobs. A remote receiver's attempt (an unresolvable
host included) goes out in the background: a retry that falls due while it is in flight runs
the next time the clock moves.
At start, pending deliveries with no retry job waiting (in flight at a crash) are re-queued.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any
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
from simulator.events.egress import ResolverFactory, guarded_connector, refusal_in, refusal_of_url
from simulator.events.failures import failure_sentence
from simulator.events.signing import NAMESPACE_HEADER, SIGNATURE_HEADER, delivery_headers

if TYPE_CHECKING:
    from simulator.domain.egress import EgressPolicy
    from simulator.domain.records import DeliveryRecord, EventRecord

log = logging.getLogger(__name__)

ATTEMPT_TIMEOUT_SECONDS = 10.0  # design.md 2.3: a 2xx within 10 s is success
RETRY_WAIT_SECONDS = 2.0
ADVANCE_WAIT_SECONDS = 3.0  # all the real time one clock/advance may wait for local receivers
CONNECTIONS_PER_HOST = 16
CONNECTIONS_TOTAL = 256

BatchOpener = Callable[[], AbstractContextManager[Any]]
LaneKey = tuple[str, str, int | None]  # scheme, host, port: what the session pools by


class _Lane:
    """Initial attempts waiting for one endpoint host (oldest first), and the workers on them."""

    __slots__ = ("starting", "waiting", "workers")

    def __init__(self) -> None:
        self.waiting: deque[str] = deque()
        self.workers = 0  # at most CONNECTIONS_PER_HOST
        self.starting = 0  # workers created that have not taken a delivery yet


class _NotSent(Exception):
    """An attempt the server chose not to make (recorded like any failed attempt); `refused`:
    by team mode's egress policy (counted apart)."""

    def __init__(self, reason: str, *, refused: bool = False) -> None:
        super().__init__(reason)
        self.refused = refused


class DeliveryEngine:
    def __init__(
        self,
        deliveries: DeliveryService,
        clock: SimClock,
        batch: BatchOpener,
        job_exists: Callable[[str], bool],
        *,
        timeout: float = ATTEMPT_TIMEOUT_SECONDS,
        retry_wait: float = RETRY_WAIT_SECONDS,
        wall: Callable[[], float] = time.time,
        loopback_only: bool = False,
        namespace: str | None = None,
        egress: EgressPolicy | None = None,
        resolver: ResolverFactory | None = None,
        observe: Callable[[str], None] | None = None,
    ) -> None:
        self._deliveries = deliveries
        # A namespace's deliveries name it (X-Service-Namespace); `default`'s stay as they were.
        self._namespace = namespace
        self._clock = clock
        self._batch = batch
        self._job_exists = job_exists
        self.timeout = timeout
        self._retry_wait = retry_wait
        self._wall = wall
        self._lanes: dict[LaneKey, _Lane] = {}
        self._lane_keys: dict[str, LaneKey] = {}  # url -> its lane (urls are few: subscriptions)
        self._started = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_flight: set[str] = set()  # automatic attempts: never two at once per delivery
        self._slow: set[str] = set()  # webhook ids whose last attempt outlasted retry_wait
        self._walks = 0  # clock advances under way
        self._wait_until = 0.0  # monotonic deadline of their waiting for local receivers
        self._session: aiohttp.ClientSession | None = None
        self._loopback_only = loopback_only
        # Team mode's webhook egress policy (simulator/events/egress.py); None: any address.
        self._egress = egress
        self._resolver = resolver
        self._observe = observe  # each attempt's outcome, for GET /metrics

    # -- wiring ----------------------------------------------------------------------------------

    def on_event(self, event: EventRecord) -> None:
        """Bus listener: record deliveries now, send them later (never blocks the emitter)."""
        for delivery_id, url in self._deliveries.on_event(event):
            self._enqueue(delivery_id, url)

    async def on_retry_job(self, payload: dict[str, Any]) -> None:
        delivery_id = payload["deliveryId"]
        delivery = self._deliveries.find(delivery_id)
        # Stamped now, at the job's due time, however long the attempt then takes.
        task = self._spawn(self._attempt(delivery_id, at=self._clock.timestamp()))
        wait = self._wait_for(delivery)
        if wait > 0:
            await asyncio.wait({task}, timeout=wait)

    @contextmanager
    def walking_the_clock(self, budget: float = ADVANCE_WAIT_SECONDS) -> Iterator[None]:
        """While `clock/advance` runs due jobs: retry jobs of local receivers may wait for their
        attempt, for `budget` real seconds in all (see the module's docstring)."""
        self._walks += 1
        self._wait_until = max(self._wait_until, time.monotonic() + budget)
        try:
            yield
        finally:
            self._walks -= 1
            if not self._walks:
                self._wait_until = 0.0

    def _wait_for(self, delivery: DeliveryRecord | None) -> float:
        """How long a retry job waits for its attempt: 0 but for a local, not slow receiver
        while the clock is walked and its budget lasts."""
        left = self._wait_until - time.monotonic()
        if left <= 0 or delivery is None or delivery["webhookId"] in self._slow:
            return 0.0
        url = self._deliveries.endpoint(delivery)
        if url is None or not is_loopback(urlsplit(url).hostname or ""):
            return 0.0
        return min(self._retry_wait, left)

    async def replay(self, delivery_id: str) -> DeliveryRecord | None:
        """One more attempt, freshly signed; answers once it is recorded (bounded by timeout)."""
        return await self._attempt(delivery_id, replay=True)

    async def lifecycle(self, _app: Any) -> AsyncIterator[None]:
        """aiohttp cleanup_ctx: the client session, the lane workers, re-queueing after a crash."""
        self._session = aiohttp.ClientSession(
            connector=guarded_connector(
                self._egress,
                self._resolver,
                limit=CONNECTIONS_TOTAL,
                limit_per_host=CONNECTIONS_PER_HOST,
            ),
        )
        self._started = True
        for delivery_id, url in self._deliveries.unfinished(self._job_exists):
            self._enqueue(delivery_id, url)
        for key in list(self._lanes):  # queued before the start
            self._wake(key)
        try:
            yield
        finally:
            self._started = False
            # An attempt cut short here was not recorded: its delivery stays pending and is
            # re-queued at the next start (at least once), as are those still waiting.
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._lanes.clear()
            await self._session.close()
            self._session = None

    async def drain(self) -> None:
        """Wait until nothing is queued or in flight (tests and benchmarks)."""
        while self._tasks or any(lane.waiting for lane in self._lanes.values()):
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

    def _enqueue(self, delivery_id: str, url: str | None) -> None:
        key = self._lane_key(url)
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
        lane.waiting.append(delivery_id)
        self._wake(key)

    def _lane_key(self, url: str | None) -> LaneKey:
        key = self._lane_keys.get(url or "")
        if key is None:
            parts = urlsplit(url or "")
            try:
                port = parts.port
            except ValueError:
                port = None
            key = (parts.scheme, parts.hostname or "", port)
            if len(self._lane_keys) < 10_000:
                self._lane_keys[url or ""] = key
        return key

    def _wake(self, key: LaneKey) -> None:
        """Add workers while deliveries wait that no worker is about to take (up to the cap)."""
        lane = self._lanes[key]
        if not self._started:
            return
        while lane.workers < CONNECTIONS_PER_HOST and len(lane.waiting) > lane.starting:
            lane.workers += 1
            lane.starting += 1
            self._spawn(self._work(key, lane))

    async def _work(self, key: LaneKey, lane: _Lane) -> None:
        """Send the lane's deliveries one after the other until none waits."""
        lane.starting -= 1
        try:
            while lane.waiting:
                delivery_id = lane.waiting.popleft()
                try:
                    await self._attempt(delivery_id)
                except Exception:  # recorded nothing: stays pending, re-sent at the next start
                    log.exception("webhook attempt %s failed unexpectedly", delivery_id)
        finally:
            lane.workers -= 1
            if not lane.workers and not lane.waiting and self._lanes.get(key) is lane:
                del self._lanes[key]

    async def _attempt(
        self, delivery_id: str, *, replay: bool = False, at: float | None = None
    ) -> DeliveryRecord | None:
        if not replay:
            if delivery_id in self._in_flight:
                return None
            self._in_flight.add(delivery_id)
        try:
            with self._batch():
                plan = self._deliveries.plan(delivery_id, replay=replay)
            if plan is None:
                return self._deliveries.find(delivery_id)
            result = await self._send(plan, at)
            if self._observe is not None:
                outcome = "refused" if result.refused else "failed"
                self._observe("succeeded" if result.succeeded else outcome)
            with self._batch():
                return self._deliveries.record(plan, result)
        finally:
            if not replay:
                self._in_flight.discard(delivery_id)

    async def _send(self, plan: AttemptPlan, at: float | None = None) -> AttemptResult:
        at = self._clock.timestamp() if at is None else at
        sent_at = self._wall()
        timestamp = max(int(sent_at), plan.min_timestamp)
        headers = self._signed_headers(plan, timestamp)
        status: int | None = None
        error: str | None = None
        text: str | None = None
        refused = False
        started = time.perf_counter()
        try:
            self._check_allowed(plan.url)
            status, text, error = await self._post(plan, headers)
        except TimeoutError as exc:
            error = failure_sentence(exc, self.timeout)
        except _NotSent as exc:
            error, refused = str(exc), exc.refused
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            error = failure_sentence(exc, self.timeout)
            if self._egress is not None and (refusal := refusal_in(exc)) is not None:
                refused, error = True, refusal
        return AttemptResult(
            trigger=plan.trigger,
            at=at,
            sent_at=sent_at,
            timestamp=timestamp,
            http_status=status,
            duration_ms=self._timed(plan.webhook_id, started),
            error=error,
            response_body=text,
            signature=headers[SIGNATURE_HEADER],
            refused=refused,
        )

    def _signed_headers(self, plan: AttemptPlan, timestamp: int) -> dict[str, str]:
        headers = delivery_headers(
            plan.body,
            event_type=plan.event_type,
            delivery_id=plan.delivery_id,
            timestamp=timestamp,
            secret=plan.secret,
            previous_secret=plan.previous_secret,
        )
        if self._namespace is not None:
            headers[NAMESPACE_HEADER] = self._namespace
        return headers

    def _check_allowed(self, url: str) -> None:
        """Raise `_NotSent` for a URL this server may not send to."""
        if self._loopback_only and not is_loopback(host := urlsplit(url).hostname or ""):
            raise _NotSent(f"not sent: {host} is not a loopback host (loopback-only server)")
        if self._egress is not None and (
            refusal := refusal_of_url(self._egress, urlsplit(url).hostname or "")
        ):
            raise _NotSent(refusal, refused=True)

    async def _post(
        self, plan: AttemptPlan, headers: dict[str, str]
    ) -> tuple[int, str, str | None]:
        """The receiver's status, the start of its body, and why it does not count (a redirect
        under team mode's egress policy) if it does not."""
        assert self._session is not None, "the engine is not started"
        async with self._session.post(
            plan.url,
            data=plan.body,
            headers=headers,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        ) as response:
            raw = await response.content.read(RESPONSE_KEPT * 4)
            error = None
            if self._egress is not None and 300 <= response.status < 400:
                # Never followed (allow_redirects=False): no hop escapes the policy.
                where = response.headers.get("Location", "")
                error = f"redirect not followed (deliveries never follow one): {where}"
            return response.status, raw.decode("utf-8", "replace"), error

    def _timed(self, webhook_id: str, started: float) -> float:
        """The attempt's duration in ms; an endpoint slower than `retry_wait` gets no wait next
        time the clock walks (`walking_the_clock`)."""
        duration_ms = (time.perf_counter() - started) * 1000
        if duration_ms > self._retry_wait * 1000:
            self._slow.add(webhook_id)
        else:
            self._slow.discard(webhook_id)
        return duration_ms
