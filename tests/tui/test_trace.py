"""The transaction detail's cascade trace tab: `t` shows it and goes back, on fixed data and
against a real server."""

from __future__ import annotations

from textual.widgets import TabbedContent

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.screens.detail import TransactionScreen
from payorch_cli.tui.widgets.detail import TraceTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.fakes import PAID, TRACE, FakeBackend
from tests.tui.helpers import screen_text, settle, until


async def test_t_switches_between_the_timeline_and_the_trace() -> None:
    app = PayorchApp(FakeBackend(), monotonic=lambda: 0.0)  # type: ignore[arg-type]  # FakeBackend stands in for Backend
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        app.open_transaction(PAID["id"])
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, TransactionScreen)
        tabs = detail.query_one(TabbedContent)
        assert tabs.active == "timeline-pane"
        await pilot.press("t")
        await settle(pilot)
        assert tabs.active == "trace-pane"
        trace = detail.query_one(TraceTable)
        assert trace.row_count == len(TRACE["entries"])
        shown = screen_text(app)
        assert "prv_orbita_pix  outcome=unavailable" in shown, shown
        assert "pending → completed  (provider_callback)" in shown, shown
        assert "callback_ignored" in shown
        await pilot.press("t")
        await settle(pilot)
        assert tabs.active == "timeline-pane"


async def test_the_trace_of_a_real_payment(server: LiveServer) -> None:
    created = await server.pay()
    tx_id = created["transactionId"]
    await server.call("POST", f"/payments/{tx_id}/simulate", {"action": "paid"})
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk))
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        app.open_transaction(tx_id)
        await settle(pilot)
        await pilot.press("t")
        trace = app.screen.query_one(TraceTable)
        await until(pilot, lambda: trace.row_count >= 4, what="the trace")
        kinds = [str(trace.get_row_at(i)[1]) for i in range(trace.row_count)]
        assert kinds[:4] == ["created", "provider_chosen", "simulate", "status_changed"], kinds
        assert "event_emitted" in kinds
