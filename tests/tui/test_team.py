"""The TUI on a team server shows whose namespace it watches and how much of that owner's quota
is taken, in the header; in local mode the header has nothing new."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from payorch_cli.client import Client
from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.widgets.header import StatusHeader
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.helpers import settle, until

ADMIN = "pat_" + "a1" * 20


@pytest.fixture
async def team_server(tmp_path: Path) -> AsyncIterator[LiveServer]:
    running = LiveServer(tmp_path / "data", team=True, admin_token=ADMIN)
    await running.start()
    yield running
    await running.stop()


def sandbox_key(space: dict[str, Any]) -> str:
    return str(next(k["secretKey"] for k in space["keys"] if k["environment"] == "sandbox"))


async def test_the_header_shows_the_owner_and_quota_of_the_namespace(
    team_server: LiveServer,
) -> None:
    def prepare() -> str:
        made = Client(team_server.url, ADMIN).request(
            "POST", "/_sim/team/tokens", {"owner": "alice", "maxNamespaces": 5}
        )
        alice = Client(team_server.url, made["token"])
        alice.namespace_call("PUT", "alice-1")
        return sandbox_key(alice.namespace_call("PUT", "alice-2"))

    key = await asyncio.to_thread(prepare)
    backend = await asyncio.to_thread(Backend, team_server.url, key, namespace="alice-2")
    app = PayorchApp(backend)
    async with app.run_test(size=(140, 30)) as pilot:
        header = lambda: app.screen.query_one(StatusHeader)  # noqa: E731
        await until(pilot, lambda: header().team != "", what="the owner in the header")
        assert header().team == "owner alice · 2/5 ns"
        assert "owner alice · 2/5 ns" in str(header().render())


async def test_local_mode_shows_no_owner(server: LiveServer) -> None:
    app = PayorchApp(await asyncio.to_thread(Backend, server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(140, 30)) as pilot:
        header = lambda: app.screen.query_one(StatusHeader)  # noqa: E731
        await until(
            pilot,
            lambda: header().merchant != "…" and app.identity is not None,
            what="the key's identity",
        )
        await settle(pilot)
        assert header().team == ""
        assert "owner" not in str(header().render())
