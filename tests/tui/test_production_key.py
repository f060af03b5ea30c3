"""Switching the TUI to a production key: the screens whose data comes from the sandbox-only
control plane (the request log, the providers, the clock) say so in place, with the key to
press, instead of raising error notifications, and no longer show the sandbox key's data."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.screens.providers import ProvidersScreen
from payorch_cli.tui.screens.requests import RequestScreen, RequestsScreen
from payorch_cli.tui.widgets.providers import ProvidersTable
from payorch_cli.tui.widgets.requests import RequestsTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.helpers import screen_text, settle, until

NEEDS_SANDBOX = "needs a sandbox key: the simulator's control plane refuses production keys"


def shown(app: PayorchApp) -> str:
    """The screen's words, whatever their line breaks."""
    return " ".join(screen_text(app).split())


def errors(app: PayorchApp) -> list[tuple[str, str, str]]:
    return [notice for notice in app.notices if notice[0] == "error"]


@pytest.mark.long(8)
async def test_every_screen_opened_then_a_production_key(server: LiveServer) -> None:
    await server.pay()
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in ("4", "enter", "escape", "5", "2", "3", "1"):  # every screen, while sandbox
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("4", "enter")  # a request left open in the Requests mode
        await until(pilot, lambda: isinstance(app.screen, RequestScreen), what="the request")
        await pilot.press("1")
        await settle(pilot)

        app.switch_key(KEYS.live_sk)
        await until(pilot, lambda: app.connection == "polling", what="the production key")
        await settle(pilot)
        assert errors(app) == []  # screens not shown raised nothing

        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RequestScreen)  # the request left open: it says why it is empty
        await until(pilot, lambda: "The request log " + NEEDS_SANDBOX in shown(app), what="why")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RequestsScreen)
        text = shown(app)
        assert "The request log " + NEEDS_SANDBOX in text and "Press k to switch." in text
        assert app.screen.query_one(RequestsTable).row_count == 0  # not the sandbox key's log
        # Its poll keeps refusing quietly.
        await pilot.pause(2.2)
        await settle(pilot)

        await pilot.press("5")
        await settle(pilot)
        assert isinstance(app.screen, ProvidersScreen)
        assert "Providers " + NEEDS_SANDBOX in shown(app)
        assert app.screen.query_one(ProvidersTable).row_count == 0

        await pilot.press("a")  # the clock dialog would only meet a refusal
        await settle(pilot)
        assert app.notices[-1][0] == "warning" and "needs a sandbox key" in app.notices[-1][2]
        assert errors(app) == [], errors(app)

        # Back to a sandbox key: the screens show their data again.
        app.switch_key(KEYS.sandbox_sk)
        await until(pilot, lambda: app.connection == "live", what="the sandbox key")
        await until(
            pilot, lambda: app.screen.query_one(ProvidersTable).row_count > 0, what="providers"
        )
        await pilot.press("4")
        await until(
            pilot, lambda: app.screen.query_one(RequestsTable).row_count > 0, what="the log"
        )
        assert not app.screen.query_one("#requests-notice", Static).display


async def test_the_request_count_is_the_keys_own(server: LiveServer) -> None:
    # The filter bar counted the sandbox key's log on under a production key, whose log the
    # sandbox-only control plane does not show.
    await server.pay()
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        bar = lambda: app.screen.query_one("#request-filters", Static)  # noqa: E731
        await until(pilot, lambda: "1 logged" in str(bar().render()), what="the sandbox count")
        app.switch_key(KEYS.live_sk)
        await until(pilot, lambda: "The request log " + NEEDS_SANDBOX in shown(app), what="why")
        await settle(pilot)
        assert "logged" not in str(bar().render())
        app.switch_key(KEYS.sandbox_sk)  # its own count again
        await until(pilot, lambda: "1 logged" in str(bar().render()), what="the count")
