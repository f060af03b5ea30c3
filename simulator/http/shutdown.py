"""Stopping a server gracefully: finish what is in flight, answer what cannot finish.

`payorch serve` calls `drain` on SIGINT/SIGTERM once it has stopped listening, then lets aiohttp
close connections and run the app's cleanup (which compacts and closes the store). Requests that
arrive on an open connection meanwhile answer 503 at once (see the envelope middleware).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from simulator.http.keys import IN_FLIGHT, STOPPING

# How long cancelled requests get to write their 503 before the server moves on.
ANSWER_SECONDS = 1.0


async def drain(app: web.Application, grace: float) -> int:
    """Wait up to `grace` seconds for the requests in flight; cancel the rest (each answers
    503 service_unavailable). Returns how many had to be cancelled."""
    app[STOPPING].set()
    # on_shutdown ends what never finishes by itself (the /_sim/events streams); its handlers
    # are idempotent, as aiohttp's cleanup runs them again.
    await app.shutdown()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    in_flight = app[IN_FLIGHT]
    while in_flight and (left := deadline - loop.time()) > 0:
        await asyncio.wait(set(in_flight), timeout=left)
    late = list(in_flight)
    for task in late:
        task.cancel()
    if late:
        await asyncio.wait(late, timeout=ANSWER_SECONDS)
    return len(late)
