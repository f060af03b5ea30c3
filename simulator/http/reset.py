"""Putting a running server back to its fixtures (POST /_sim/reset): what runs beside the requests,
and how a reset gets the server to itself.

The world a reset replaces is everything the composition root (`simulator/app.py`) derives from
the store: the services, their in-memory indexes and caches (the transaction index, the ledger's
totals, the rendered views, the idempotency map, the rate limiter's buckets...), the scheduler
and the webhook engine. Rather than give each of them a `reset()` (one forgotten cache would
answer from the old world), the reset empties the store in one atomic rewrite and builds them
all again from it, as a start would.

Order, so that no request ever sees half of each world:

1. the gate closes: requests that arrive wait for it before anything else (authentication
   included), then run against the new world;
2. the requests already running finish (up to `WAIT_SECONDS`; past it nothing changes and the
   reset answers 409 `requests_in_flight`). Streams (`GET /_sim/events`, the request log's
   tail) do not count: they read no state and stay open across the reset;
3. the background stops: the scheduler's tick and the webhook engine (its attempts in flight are
   cancelled, unrecorded: their deliveries are about to go);
4. with no await from here: the store is rewritten (one snapshot put in place by rename: a crash
   leaves the old state or the new one), the clock returns to real time, the request log is
   emptied and the world is built again;
5. the new world's background starts and the gate opens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.http.keys import ENGINE, IN_FLIGHT, SCHEDULER, SETTINGS

WAIT_SECONDS = 15.0  # longer than a webhook replay (its attempt times out after 10 s)


def streaming(handler: Any) -> Any:
    """Mark a handler whose response never ends by itself (a server-sent-event stream): a reset
    does not wait for it."""
    handler.streaming = True
    return handler


class Background:
    """The current world's background work: the webhook engine and the scheduler's tick.

    Started by the app's cleanup context (and stopped at the end); a reset stops the old
    world's and starts the new one's.
    """

    def __init__(self) -> None:
        self._engine: AsyncIterator[None] | None = None
        self._tick: asyncio.Task[None] | None = None

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """aiohttp cleanup context: the background of whichever world is current at the end."""
        await self.start(app)
        yield
        await self.stop()

    async def start(self, app: web.Application) -> None:
        self._engine = app[ENGINE].lifecycle(app)
        await anext(self._engine)
        interval = app[SETTINGS].tick_seconds
        if interval:
            self._tick = asyncio.create_task(app[SCHEDULER].run_forever(interval))

    async def stop(self) -> None:
        tick, self._tick = self._tick, None
        if tick is not None:
            tick.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await tick
        engine, self._engine = self._engine, None
        if engine is not None:
            await anext(engine, None)  # runs the engine's clean-up


class ServerReset:
    def __init__(
        self,
        app: web.Application,
        background: Background,
        rebuild: Callable[[web.Application], None],
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        self._app = app
        self._background = background
        self._rebuild = rebuild
        self.wait_seconds = wait_seconds
        self._open = asyncio.Event()
        self._open.set()
        self._lock = asyncio.Lock()

    @property
    def gate_open(self) -> bool:
        return self._open.is_set()

    async def wait_for_gate(self) -> None:
        await self._open.wait()

    async def run(self) -> None:
        """Reset the server (the calling request's task excepted from the wait); one at a time."""
        async with self._lock:
            self._open.clear()
            try:
                await self._settle(asyncio.current_task())
                await self._background.stop()
                self._rebuild(self._app)  # no await inside: atomic for every other request
                await self._background.start(self._app)
            finally:
                self._open.set()

    async def _settle(self, me: asyncio.Task[Any] | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        while running := self._running(me):
            left = deadline - loop.time()
            if left <= 0:
                raise ApiError(
                    "requests_in_flight",
                    f"{len(running)} request(s) still running after {self.wait_seconds:g} s; "
                    "nothing was reset. Retry when they are done.",
                    details={"running": len(running)},
                )
            await asyncio.wait(running, timeout=left)

    def _running(self, me: asyncio.Task[Any] | None) -> set[asyncio.Task[Any]]:
        return {
            task
            for task, request in self._app[IN_FLIGHT].items()
            if task is not me and not getattr(request.match_info.handler, "streaming", False)
        }
