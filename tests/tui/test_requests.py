"""The Requests screen (key 4): the server's request log, its filters and one request's bodies."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from payorch_cli.client import ApiError
from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.screens.requests import RequestScreen, RequestsScreen
from payorch_cli.tui.widgets.requests import RequestBodies, RequestsTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.fakes import REQUESTS, FakeBackend
from tests.tui.helpers import settle, until


async def test_filters_go_to_the_server() -> None:
    backend = FakeBackend()
    app = PayorchApp(backend, monotonic=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        assert isinstance(app.screen, RequestsScreen)
        table = app.screen.query_one(RequestsTable)
        assert table.row_count == len(REQUESTS)
        await pilot.press("s", "s")  # 4xx
        await settle(pilot)
        await pilot.press("m", "m")  # POST
        await settle(pilot)
        await pilot.press("slash", *"payments", "enter")
        await settle(pilot)
        assert backend.request_queries[-1] == ("4xx", "POST", "/payments")
        assert table.row_count == 1
        await pilot.press("escape")
        await settle(pilot)
        assert backend.request_queries[-1] == (None, None, None)


async def test_a_request_shows_the_events_it_caused() -> None:
    app = PayorchApp(FakeBackend(), monotonic=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        table = app.screen.query_one(RequestsTable)
        advance = next(r for r in REQUESTS if r["eventIds"])
        table.move_cursor(row=table.get_row_index(advance["id"]))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RequestScreen), what="the detail")
        await settle(pilot)
        console = Console(record=True, width=100, file=io.StringIO())
        console.print(app.screen.query_one(RequestBodies).content)
        lines = [line.split() for line in console.export_text().splitlines()]
        assert ["events", "evt_settled,", "evt_pdf"] in lines


async def test_the_log_of_a_live_server(server: LiveServer) -> None:
    await server.pay()
    with pytest.raises(ApiError) as caught:
        await server.call("GET", "/payments/TXN-nope")
    missing = caught.value.request_id
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("4")
        table = lambda: app.screen.query_one(RequestsTable)  # noqa: E731
        await until(pilot, lambda: missing in table().rows, what="the 404")
        await pilot.press("s", "s")  # 4xx only
        await until(pilot, lambda: table().row_count == 1, what="the 4xx filter")
        # New requests show within a second or so, without a key press.
        with pytest.raises(ApiError):
            await server.call("POST", "/payments", {"amount": 0, "paymentMethodId": "1001"})
        await until(pilot, lambda: table().row_count == 2, timeout=5, what="the poll")
        table().move_cursor(row=table().get_row_index(missing))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RequestScreen), what="the detail")
        screen = app.screen
        assert isinstance(screen, RequestScreen)
        await until(pilot, lambda: screen.detail is not None, what="the bodies")
        assert screen.detail is not None
        assert screen.detail["response"]["body"]["body"]["error"]["requestId"] == missing
        assert screen.query_one(RequestBodies).is_attached


async def test_the_tuis_own_polling_is_left_out_until_t(server: LiveServer) -> None:
    """The screens' polling is tagged (X-Payorch-Tool: tui): the Requests screen lists the
    user's requests only; `t` brings payorch's own back."""
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.press("1")  # the transactions screen polls the server
        await settle(pilot)
        await server.pay()
        await pilot.press("4")
        table = lambda: app.screen.query_one(RequestsTable)  # noqa: E731
        await until(pilot, lambda: table().row_count >= 1, what="the user's payment")
        await settle(pilot)
        assert table().row_count == 1  # the payment, none of the TUI's reads
        await pilot.press("t")
        await until(pilot, lambda: table().row_count > 1, what="the TUI's own requests")
        await pilot.press("t")
        await until(pilot, lambda: table().row_count == 1, what="hidden again")
