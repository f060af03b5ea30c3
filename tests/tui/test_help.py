"""`?` and F1 show the keys of the screen the user is on (its bindings, its own first), closed by
Escape."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.screens.help import HelpScreen
from payorch_cli.tui.screens.requests import RequestsScreen
from payorch_cli.tui.screens.transactions import TransactionsScreen
from tests.tui.fakes import FakeBackend
from tests.tui.helpers import screen_text, settle


def shown(app: PayorchApp) -> str:
    return " ".join(screen_text(app).split())


@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_lists_the_keys_of_the_screen_shown(key: str) -> None:
    app = PayorchApp(FakeBackend(), monotonic=lambda: 0.0)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = shown(app)
        assert "Keys: transactions" in text
        # The screen's own keys (shown in the footer or not), then the app's.
        for row in ("/ Search", "s S Status", "m M Method", "p Paid", "⏎ Open", "] Next page"):
            assert row in text, row
        for row in ("a Clock+", "k Key", "n Namespace", "q Quit", "4 Requests", "? f1 Keys"):
            assert row in text, row
        assert text.index("p Paid") < text.index("a Clock+")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TransactionsScreen)

        await pilot.press("4", key)  # another screen: its own keys
        await settle(pilot)
        text = shown(app)
        assert "Keys: requests" in text and "/ Path" in text and "t Tools" in text
        assert "p Paid" not in text
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RequestsScreen)


async def test_a_question_mark_typed_in_search_is_text() -> None:
    app = PayorchApp(FakeBackend(), monotonic=lambda: 0.0)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "question_mark")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        assert app.screen.query_one("#search", Input).value == "?"
