"""Search finds a transaction by any part of its id or of its merchantOrderId, in any case: the
API matches whole values only, so the TUI fetches a whole id, filters a whole order id on the
server, and looks for a part in the newest transactions."""

from __future__ import annotations

import pytest

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.screens.transactions import TransactionsScreen
from payorch_cli.tui.widgets.transactions import TransactionsTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.helpers import settle, until


@pytest.mark.long(12)
async def test_search_by_part_of_an_id_or_an_order_id(server: LiveServer) -> None:
    alpha = (await server.pay(merchantOrderId="shop-2026-alpha-0042"))["transactionId"]
    beta = (await server.pay(merchantOrderId="shop-2026-beta-0043"))["transactionId"]
    other = (await server.pay(merchantOrderId="elsewhere-7"))["transactionId"]
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(120, 35)) as pilot:
        table = lambda: app.screen.query_one(TransactionsTable)  # noqa: E731
        await until(pilot, lambda: len(table().rows) == 3, what="the rows")

        async def search(text: str) -> set[str]:
            await pilot.press("escape", "slash", *text, "enter")
            screen = app.screen
            assert isinstance(screen, TransactionsScreen)
            await until(pilot, lambda: screen.query_state.search == text, what="the search")
            await settle(pilot)
            return {str(key.value) for key in table().rows}

        assert await search(beta[:10]) == {beta}  # a prefix of an id
        assert await search(alpha[6:14].lower()) == {alpha}  # its middle, any case
        assert await search("alpha") == {alpha}  # part of a merchantOrderId
        assert await search("shop-2026") == {alpha, beta}
        assert await search("elsewhere-7") == {other}  # a whole one, as before
        assert await search(other) == {other}  # a whole id, as before
        assert await search("nothing-like-it") == set()
        await pilot.press("escape", "escape")
        await until(pilot, lambda: len(table().rows) == 3, what="every row again")
