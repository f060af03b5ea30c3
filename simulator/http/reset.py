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
from typing import Any, TypeVar

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.http.keys import ENGINE, IN_FLIGHT, SCHEDULER, SETTINGS
from simulator.store import Encoded
from simulator.store.saved import Loaded

T = TypeVar("T")

WAIT_SECONDS = 15.0  # longer than a webhook replay (its attempt times out after 10 s)


def refuses_to_wait_for_a_swap(handler: Any) -> Any:
    """Mark a handler that answers 409 `restore_in_progress` instead of waiting at the gate
    while a reset or restore runs (a restore: two at once would race for the same world)."""
    handler.refuses_to_wait = True
    return handler


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
    """The gate, and the one swap of the world at a time: a reset, or a restore of a saved state
    (a reset to a saved world instead of an empty one). Saving a state passes the same gate so
    that the copy holds no request half-way through."""

    def __init__(
        self,
        app: web.Application,
        background: Background,
        rebuild: Callable[[web.Application], None],
        wait_seconds: float = WAIT_SECONDS,
        *,
        export: Callable[[web.Application], Encoded] | None = None,
        restore: Callable[[web.Application, Loaded], None] | None = None,
    ) -> None:
        self._app = app
        self._background = background
        self._rebuild = rebuild
        self._export = export
        self._restore = restore
        self.wait_seconds = wait_seconds
        self._open = asyncio.Event()
        self._open.set()
        self._lock = asyncio.Lock()
        self._swapping = False

    @property
    def gate_open(self) -> bool:
        return self._open.is_set()

    @property
    def swapping(self) -> bool:
        """A reset or a restore is running (or waiting for its turn)."""
        return self._swapping

    async def wait_for_gate(self) -> None:
        await self._open.wait()

    async def run(
        self,
        swap: Callable[[web.Application], None] | None = None,
        *,
        refuse_if_swapping: bool = False,
    ) -> None:
        """Reset the server, or run `swap` in its place (the calling request's task excepted
        from the wait); one at a time. `refuse_if_swapping`: 409 `restore_in_progress` rather
        than wait for a reset or restore already under way."""
        if refuse_if_swapping and self._swapping:
            raise ApiError("restore_in_progress")
        self._swapping = True
        try:
            async with self._lock:
                self._open.clear()
                try:
                    await self._settle(asyncio.current_task(), "nothing was reset or restored")
                    await self._background.stop()
                    (swap or self._rebuild)(self._app)  # no await inside: atomic for the others
                    await self._background.start(self._app)
                finally:
                    self._open.set()
        finally:
            self._swapping = False

    async def quiesced(self, action: Callable[[], T]) -> T:
        """`action()` (which must not await) once the running requests have finished, the
        arriving ones held meanwhile: what it reads, no request is half-way through."""
        async with self._lock:
            self._open.clear()
            try:
                await self._settle(asyncio.current_task(), "nothing was saved")
                return action()
            finally:
                self._open.set()

    async def export(self) -> Encoded:
        """A consistent copy of the whole state (the composition root's `export_state`), taken
        with no request half-way through."""
        assert self._export is not None
        export, app = self._export, self._app
        return await self.quiesced(lambda: export(app))

    async def restore(self, loaded: Loaded) -> None:
        """A reset to a saved world (the composition root's `restore_state`); 409
        `restore_in_progress` if a reset or restore is under way."""
        assert self._restore is not None
        restore = self._restore
        await self.run(lambda app: restore(app, loaded), refuse_if_swapping=True)

    async def _settle(self, me: asyncio.Task[Any] | None, outcome: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_seconds
        while running := self._running(me):
            left = deadline - loop.time()
            if left <= 0:
                raise ApiError(
                    "requests_in_flight",
                    f"{len(running)} request(s) still running after {self.wait_seconds:g} s; "
                    f"{outcome}. Retry when they are done.",
                    details={"running": len(running)},
                )
            await asyncio.wait(running, timeout=left)

    def _running(self, me: asyncio.Task[Any] | None) -> set[asyncio.Task[Any]]:
        return {
            task
            for task, request in self._app[IN_FLIGHT].items()
            if task is not me and not getattr(request.match_info.handler, "streaming", False)
        }
