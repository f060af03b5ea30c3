"""A real payorch server in the test's own event loop, and a webhook endpoint beside it.

The TUI makes its HTTP calls in threads, so a server in the same loop as the app under Pilot
answers them; the test itself calls the API from a thread too (`await server.call(...)`), never
blocking the loop the server runs on. Each test gets its own data dir and free port, so the
suite is safe under `pytest -n 2`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from payorch_cli.client import Client
from simulator.app import create_app
from simulator.settings import Settings
from tests.conftest import KEYS, builtin_catalog


class LiveServer:
    def __init__(self, data_dir: Path, **settings: Any) -> None:
        self.data_dir = data_dir
        self.settings = settings  # more of Settings' fields (team mode's, for one)
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        settings = Settings(
            data_dir=self.data_dir,
            tick_seconds=0.05,
            rate_limit=False,
            port=self.port,
            **self.settings,
        )
        # The process's parsed built-in fixtures (tests/conftest.py), as a server shares them
        # between its namespaces: parsing the YAML again cost more than the app's whole start.
        shared = builtin_catalog() if settings.fixtures_dir is None else None
        app = create_app(settings, catalog=shared)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = runner.addresses[0][1]
        self._runner = runner

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def call(
        self, method: str, path: str, body: Any = None, key: str = KEYS.sandbox_sk
    ) -> Any:
        def blocking() -> Any:
            client = Client(self.url, key, tool=None)  # stands in for the user
            try:
                return client.request(method, path, body)
            finally:
                client.close()

        return await asyncio.to_thread(blocking)

    async def pay(self, **body: Any) -> dict[str, Any]:
        return await self.call(
            "POST", "/payments", {"amount": 50, "paymentMethodId": "1001", **body}
        )


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[LiveServer]:
    running = LiveServer(tmp_path / "data")
    await running.start()
    yield running
    await running.stop()


class Endpoint:
    """A webhook receiver answering 200, counting what it got."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append({"headers": dict(request.headers), "body": await request.read()})
        return web.json_response({"ok": True})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hooks", self.handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/hooks"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    running = Endpoint()
    await running.start()
    yield running
    await running.stop()
