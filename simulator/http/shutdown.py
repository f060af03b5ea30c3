"""Stopping a server gracefully: finish what is in flight, answer what cannot finish.

`payorch serve` calls `drain` on SIGINT/SIGTERM once it has stopped listening, then lets aiohttp
close connections and run the app's cleanup (which compacts and closes the store). Requests that
arrive on an open connection meanwhile answer 503 at once (see the envelope middleware).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from simulator.http.keys import IN_FLIGHT, STOPPING, WORLDS

# How long cancelled requests get to write their 503 before the server moves on.
ANSWER_SECONDS = 1.0


async def drain(app: web.Application, grace: float) -> int:
    """Wait up to `grace` seconds for the requests in flight; cancel the rest (each answers
    503 service_unavailable). Returns how many had to be cancelled."""
    app[STOPPING].set()
    # on_shutdown ends what never finishes by itself (the event and request-log streams), in
    # `default` and in every loaded namespace (an open stream of one would hold the exit back
    # for the whole grace, then be cut off); its handlers are idempotent, as aiohttp's cleanup
    # runs them again.
    await app.shutdown()
    worlds = app.get(WORLDS)
    for world in worlds.loaded() if worlds is not None else ():
        await world.shutdown()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while (in_flight := _in_flight(app)) and (left := deadline - loop.time()) > 0:
        await asyncio.wait(in_flight, timeout=left)
    late = list(_in_flight(app))
    for task in late:
        task.cancel()
    if late:
        await asyncio.wait(late, timeout=ANSWER_SECONDS)
    return len(late)


def _in_flight(app: web.Application) -> set[asyncio.Task[Any]]:
    """The requests being handled in every world: `default`'s and the loaded namespaces'."""
    tasks: set[asyncio.Task[Any]] = set(app[IN_FLIGHT].keys())
    worlds = app.get(WORLDS)
    for world in worlds.loaded() if worlds is not None else ():
        tasks.update(world[IN_FLIGHT].keys())
    return tasks
