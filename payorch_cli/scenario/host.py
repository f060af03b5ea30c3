"""In-process simulators: `payorch scenario run` without --base-url, and the pytest plugin.

One background thread per process runs an asyncio loop; each simulator is a fresh app from
`simulator.app.create_app` (in-memory store, its own clock) behind an aiohttp AppRunner on a free
loopback port. Starting one costs about a millisecond once the first has paid for the imports and
the fixtures, so every scenario (and every test using the `payorch` fixture) gets its own: no state
leaks between them, balances and events are exact, and parallel runs never share a server.
Besides `payorch serve`, this module is the only part of payorch_cli that imports aiohttp and
boots a simulator (`simulator.app`); the rest of the CLI talks HTTP, and reads from the simulator
package only its fixtures (`payorch keys`), its settings' defaults and its OpenAPI document.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

_lock = threading.Lock()
_host: SimulatorHost | None = None


@dataclass
class Simulator:
    base_url: str
    start_ms: float
    _runner: Any
    _host: SimulatorHost

    def stop(self) -> None:
        self._host.call(self._runner.cleanup())


class SimulatorHost:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="payorch-simulators", daemon=True
        )
        self._thread.start()
        self._catalog: Any = None

    def call(self, coroutine: Any, timeout: float = 30) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout)

    def start(self) -> Simulator:
        started = time.perf_counter()
        base_url, runner = self.call(self._start())
        return Simulator(base_url, (time.perf_counter() - started) * 1000, runner, self)

    async def _start(self) -> tuple[str, Any]:
        from aiohttp import web

        from simulator.app import create_app
        from simulator.fixture_loader import load_catalog
        from simulator.http.keys import CONTEXT
        from simulator.settings import Settings

        if self._catalog is None:
            self._catalog = load_catalog()  # read-only; shared by every simulator here
        # Like `payorch serve` (rate limit on, scheduler ticking in real time), but in memory.
        settings = Settings(host="127.0.0.1", port=0, data_dir=None)
        app = create_app(settings, catalog=self._catalog)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]  # the port chosen for port 0
        base_url = f"http://127.0.0.1:{port}"
        app[CONTEXT].public_url = base_url  # what `serve` does once it knows its port
        return base_url, runner

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def host() -> SimulatorHost:
    """The process's host (made on first use; pytest-xdist workers each get their own)."""
    global _host
    with _lock:
        if _host is None:
            _host = SimulatorHost()
        return _host
