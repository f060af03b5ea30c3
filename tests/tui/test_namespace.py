"""The TUI in a namespace: it shows the namespace it watches (its URL in the header) and `n`
switches to another one, the same key's counterpart there."""

from __future__ import annotations

import asyncio

from textual.widgets import OptionList

from payorch_cli.client import Client
from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.widgets.header import StatusHeader
from payorch_cli.tui.widgets.transactions import TransactionsTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.helpers import settle, until


async def test_watch_a_namespace_and_switch_back_to_default(server: LiveServer) -> None:
    def prepare() -> tuple[str, str]:
        Client(server.url).namespace_call("PUT", "team-1")
        inside = Client(server.url, namespace="team-1").post(
            "/payments", {"amount": 11, "paymentMethodId": "1001"}
        )
        outside = Client(server.url).post("/payments", {"amount": 12, "paymentMethodId": "1001"})
        return inside["transactionId"], outside["transactionId"]

    inside, outside = await asyncio.to_thread(prepare)
    backend = await asyncio.to_thread(Backend, server.url, KEYS.sandbox_sk, namespace="team-1")
    app = PayorchApp(backend)
    async with app.run_test(size=(100, 30)) as pilot:
        table = lambda: app.screen.query_one(TransactionsTable)  # noqa: E731
        await until(pilot, lambda: inside in table().rows, what="the namespace's row")
        assert outside not in table().rows
        assert app.screen.query_one(StatusHeader).server.endswith("/ns/team-1")
        await pilot.press("n")
        await settle(pilot)
        await pilot.press(*"default", "enter")
        await until(pilot, lambda: outside in table().rows, what="default's row")
        assert inside not in table().rows
        assert not app.screen.query_one(StatusHeader).server.endswith("/ns/team-1")


async def test_the_namespace_switch_lists_the_servers_namespaces(server: LiveServer) -> None:
    def prepare() -> str:
        for name in ("team-1", "team-2"):
            Client(server.url).namespace_call("PUT", name)
        return Client(server.url, namespace="team-2").post(
            "/payments", {"amount": 13, "paymentMethodId": "1001"}
        )["transactionId"]

    inside = await asyncio.to_thread(prepare)
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        options = lambda: app.screen.query_one("#names", OptionList)  # noqa: E731
        await until(pilot, lambda: options().option_count == 3, what="the namespaces")
        names = [options().get_option_at_index(i).id for i in range(3)]
        assert names == ["default", "team-1", "team-2"]
        assert options().highlighted == 0  # the current one
        await pilot.press("down", "down", "down", "enter")  # from the name to the list, to team-2
        table = lambda: app.screen.query_one(TransactionsTable)  # noqa: E731
        await until(pilot, lambda: inside in table().rows, what="team-2's row")
        assert app.screen.query_one(StatusHeader).server.endswith("/ns/team-2")
