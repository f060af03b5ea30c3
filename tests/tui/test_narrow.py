"""At 80 columns the request log shows a transaction's id whole in its path (`POST
/api/v1/payments/TXN-…/simulate`): the time drops its date and the path its `/api/v1` before an
id is cut."""

from __future__ import annotations

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.widgets.requests import RequestsTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.helpers import screen_text, settle, until


async def test_at_80_columns_a_transaction_id_in_the_request_log_is_whole(
    server: LiveServer,
) -> None:
    tx_id = (await server.pay())["transactionId"]
    assert len(tx_id) == 20
    await server.call("POST", f"/payments/{tx_id}/simulate", {"action": "paid"})
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await until(
            pilot, lambda: app.screen.query_one(RequestsTable).row_count == 2, what="the log"
        )
        await settle(pilot)
        [line] = [line for line in screen_text(app).splitlines() if "/simulate" in line]
        assert f"/payments/{tx_id}/simulate" in line, line
        assert " 200 " in line, line  # and the status still shows
