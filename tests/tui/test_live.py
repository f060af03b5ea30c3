"""The TUI against a real server: rows appear, keys move money, deliveries replay, and a
server that goes away is noticed and found again. Also measures the event-to-row latency."""

from __future__ import annotations

import asyncio
import time

import pytest

from payorch_cli.client import ApiError, Client
from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import PAGE_SIZE, Backend
from payorch_cli.tui.screens.deliveries import DeliveriesScreen
from payorch_cli.tui.screens.detail import TransactionScreen
from payorch_cli.tui.screens.transactions import TransactionsScreen
from payorch_cli.tui.widgets.deliveries import RequestPanel
from payorch_cli.tui.widgets.detail import TimelineTable
from payorch_cli.tui.widgets.header import StatusHeader
from payorch_cli.tui.widgets.transactions import BalanceStrip, Pager, TransactionsTable
from tests.conftest import KEYS
from tests.tui.conftest import Endpoint, LiveServer
from tests.tui.helpers import settle, until


def tui(server: LiveServer, key: str = KEYS.sandbox_sk) -> PayorchApp:
    return PayorchApp(Backend(server.url, key))


def table(app: PayorchApp) -> TransactionsTable:
    return app.screen.query_one(TransactionsTable)


def strip(app: PayorchApp) -> str:
    return str(app.screen.query_one(BalanceStrip).content)


async def test_new_payment_appears_then_paid_by_key_moves_status_and_balance(
    server: LiveServer,
) -> None:
    app = tui(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.connection == "live", what="the live stream")
        await settle(pilot)
        assert "pending 0.00" in strip(app)

        created = await server.pay(merchantOrderId="order-tui-1")
        tx_id = created["transactionId"]
        # No timing assertion (it failed under load): how fast rows appear is measured by the
        # app's own latencies, which bench/ and the README report.
        await until(pilot, lambda: tx_id in table(app).rows, what="the new row")
        assert table(app).status_of(tx_id) == "pending"

        table(app).move_cursor(row=table(app).get_row_index(tx_id))
        await pilot.press("p")
        await until(pilot, lambda: table(app).status_of(tx_id) == "completed", what="completed")
        # 50 USD less fees (1.75 + 1.05) and the 5 % reserve: pending until T+2.
        await until(pilot, lambda: "pending 47.20" in strip(app), what=f"balance: {strip(app)}")
        assert any("→ completed" in title for _, title, _ in app.notices), app.notices

        await pilot.press("enter")  # the detail: its events in time order, from the stream
        detail = app.screen
        assert isinstance(detail, TransactionScreen)
        timeline = detail.query_one(TimelineTable)
        await until(pilot, lambda: timeline.row_count >= 4, what="the timeline")
        whats = [str(timeline.get_row_at(i)[2]) for i in range(timeline.row_count)]
        assert whats[:2] == ["created", "completed"], whats
        assert {"payment.completed", "payment.captured"} <= set(whats), whats
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TransactionsScreen)

        # Event-to-row: a change made by someone else (the user's code) reaches the screen
        # through the event stream alone, timed from before the request that causes it.
        second = (await server.pay())["transactionId"]
        await until(pilot, lambda: second in table(app).rows, what="the second row")
        started = time.perf_counter()
        await server.call("POST", f"/payments/{second}/simulate", {"action": "failed"})
        await until(pilot, lambda: table(app).status_of(second) == "failed", what="failed")
        event_to_row = time.perf_counter() - started
        stream_to_row = max(app.latencies)
        print(
            f"\nTUI latency: "
            f"simulate request->row {event_to_row * 1000:.1f} ms, "
            f"stream read->row applied max {stream_to_row * 1000:.2f} ms"
        )


async def test_destructive_action_asks_first(server: LiveServer) -> None:
    tx_id = (await server.pay())["transactionId"]
    app = tui(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: tx_id in table(app).rows, what="the row")
        await pilot.press("f")
        await settle(pilot)
        assert app.screen.__class__.__name__ == "ConfirmDialog"
        await pilot.press("n")
        await settle(pilot)
        assert (await server.call("GET", f"/payments/{tx_id}"))["status"] == "pending"
        await pilot.press("f", "y")
        await until(pilot, lambda: table(app).status_of(tx_id) == "failed", what="failed")


async def test_api_error_is_a_notification_with_its_code(server: LiveServer) -> None:
    tx_id = (await server.pay())["transactionId"]
    app = tui(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: tx_id in table(app).rows, what="the row")
        # Refund a pending payment (the footer no longer offers it; a stale row could): the
        # API refuses.
        app.request_simulate(tx_id, "refunded")
        await pilot.press("y")
        await until(
            pilot,
            lambda: any(s == "error" and "invalid_request" in m for s, _, m in app.notices),
            what="the error notification",
        )
        assert table(app).status_of(tx_id) == "pending"
        assert app.is_running


async def test_replay_a_delivery(server: LiveServer, endpoint: Endpoint) -> None:
    await server.call("POST", "/webhooks", {"url": endpoint.url, "events": ["payment.completed"]})
    tx_id = (await server.pay())["transactionId"]
    app = tui(server)
    async with app.run_test(size=(100, 24)) as pilot:
        await until(pilot, lambda: app.connection == "live", what="the live stream")
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, DeliveriesScreen)
        await settle(pilot)
        await server.call("POST", f"/payments/{tx_id}/simulate", {"action": "paid"})

        def delivered() -> bool:
            rows = list(screen.deliveries.values())
            return bool(rows) and rows[0].get("status") == "succeeded"

        await until(pilot, delivered, what="the delivery, succeeded")
        [delivery] = screen.deliveries.values()
        assert len(endpoint.received) == 1
        await pilot.press("R")
        await until(
            pilot,
            lambda: screen.deliveries[delivery["id"]]["attemptCount"] == 2,
            what="the replayed attempt",
        )
        assert len(endpoint.received) == 2
        assert screen.deliveries[delivery["id"]]["attempts"][-1]["trigger"] == "replay"
        assert any(title == "Replayed" for _, title, _ in app.notices)

        await pilot.press("enter")  # open it: headers and body
        await settle(pilot)
        assert app.screen.__class__.__name__ == "DeliveryScreen"
        request = app.screen.query_one(RequestPanel)
        assert request.headers["X-Service-Signature"].startswith("t=")
        assert request.headers["X-Service-Delivery"] == delivery["id"]
        assert tx_id in request.body


async def test_server_going_away_shows_disconnected_and_recovers(server: LiveServer) -> None:
    app = tui(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.connection == "live", what="the live stream")
        header = app.screen.query_one(StatusHeader)
        assert "live" in header.render().plain

        await server.stop()
        await until(pilot, lambda: app.connection == "disconnected", what="disconnected")
        await pilot.pause()
        assert "disconnected" in header.render().plain
        assert isinstance(app.screen, TransactionsScreen) and app.is_running

        await server.start()  # same port, same data dir
        await until(pilot, lambda: app.connection == "live", timeout=8, what="reconnected")
        tx_id = (await server.pay())["transactionId"]
        await until(pilot, lambda: tx_id in table(app).rows, what="a row after the restart")
        assert "live" in header.render().plain


async def test_live_key_polls_without_a_stream(server: LiveServer) -> None:
    created = await server.call(
        "POST", "/payments", {"amount": 20, "paymentMethodId": "1001"}, key=KEYS.live_sk
    )
    tx_id = created["transactionId"]
    app = tui(server, KEYS.live_sk)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.connection == "polling", what="polling")
        await until(pilot, lambda: tx_id in table(app).rows, what="the live row")
        assert app.identity is not None and app.identity.environment == "production"
        assert "production" in app.screen.query_one(StatusHeader).render().plain


async def test_paging_through_a_thousand_rows(server: LiveServer) -> None:
    def create_many(count: int) -> list[str]:
        client = Client(server.url, KEYS.sandbox_sk)  # one keep-alive connection
        try:
            return [
                client.post("/payments", {"amount": 1 + i, "paymentMethodId": "1001"})[
                    "transactionId"
                ]
                for i in range(count)
            ]
        finally:
            client.close()

    ids = await asyncio.to_thread(create_many, 1_050)
    newest_first = ids[::-1]
    app = tui(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: newest_first[0] in table(app).rows, what="page 1")
        screen = app.screen
        assert isinstance(screen, TransactionsScreen)
        assert table(app).row_count == PAGE_SIZE
        assert "page 1/21" in str(screen.query_one(Pager).content)
        assert "1,050 transactions" in str(screen.query_one(Pager).content)

        started = time.perf_counter()
        await pilot.press("right_square_bracket", "right_square_bracket")
        await until(pilot, lambda: newest_first[2 * PAGE_SIZE] in table(app).rows, what="page 3")
        print(f"\nTUI paging: two pages of {PAGE_SIZE} in {time.perf_counter() - started:.3f} s")
        assert "page 3/21" in str(screen.query_one(Pager).content)
        assert newest_first[0] not in table(app).rows

        # A payment created meanwhile is counted, not inserted: the page does not shift.
        new = (await server.pay())["transactionId"]
        await until(pilot, lambda: screen.newer == 1, what="1 new above")
        assert new not in table(app).rows
        await pilot.press("escape")  # back to page 1, no filters
        await until(pilot, lambda: new in table(app).rows, what="the new row on page 1")


async def test_advance_the_clock_by_key_settles_the_balance(server: LiveServer) -> None:
    tx_id = (await server.pay())["transactionId"]
    await server.call("POST", f"/payments/{tx_id}/simulate", {"action": "paid"})
    app = tui(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "pending 47.20" in strip(app), what=f"pending: {strip(app)}")
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("down", "down", "down", "down", "enter")  # +2d: T+2 settlement
        await until(
            pilot,
            lambda: app.clock is not None and app.clock.offset_seconds >= 172_800,
            what="the clock moved",
        )
        # Settled: the payment leaves `pending`; its 5 % rolling reserve is held apart.
        await until(pilot, lambda: "reserve 2.50" in strip(app), what=f"settled: {strip(app)}")
        assert "pending 0.00" in strip(app)
        assert "+2d" in app.screen.query_one(StatusHeader).render().plain


async def test_providers_screen_starts_and_ends_an_outage_and_follows_production_charges(
    server: LiveServer,
) -> None:
    from payorch_cli.tui.screens.providers import ProvidersScreen
    from payorch_cli.tui.widgets.providers import ProvidersTable

    app = tui(server)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await until(pilot, lambda: isinstance(app.screen, ProvidersScreen), what="providers")
        providers = app.screen.query_one(ProvidersTable)
        await until(pilot, lambda: "prv_stp_mx" in providers.rows, what="the provider rows")

        def now_of(provider_id: str) -> str:
            return str(providers.get_cell(provider_id, "now"))

        assert now_of("prv_stp_mx") == "accept"
        providers.move_cursor(row=providers.get_row_index("prv_stp_mx"))
        await pilot.press("o")
        await until(pilot, lambda: now_of("prv_stp_mx") == "outage", what="the outage shown")
        provider = await server.call("GET", "/_sim/providers/prv_stp_mx")
        assert provider["effectiveBehaviour"] == "outage"
        assert provider["incidents"][0]["active"] is True

        # A production charge made elsewhere shows in the counts without a key pressed.
        with pytest.raises(ApiError) as refused:
            await server.call(
                "POST", "/payments", {"amount": 50, "paymentMethodId": "1001"}, key=KEYS.live_sk
            )
        assert refused.value.code == "cascade_exhausted"  # the provider is out

        def counts_of(provider_id: str) -> str:
            return str(providers.get_cell(provider_id, "counts"))

        await until(pilot, lambda: "1 down" in counts_of("prv_stp_mx"), what="the counts")

        # `e` ends the selected provider's outage early: back to accepting at once.
        await pilot.press("e")
        await until(pilot, lambda: now_of("prv_stp_mx") == "accept", what="the outage ended")
        assert (await server.call("GET", "/_sim/providers/prv_stp_mx"))["incidents"] == []
        await server.call(
            "POST", "/payments", {"amount": 50, "paymentMethodId": "1001"}, key=KEYS.live_sk
        )
        await until(pilot, lambda: "1 ok" in counts_of("prv_stp_mx"), what="a charge accepted")

        await pilot.press("o")
        await until(pilot, lambda: now_of("prv_stp_mx") == "outage", what="a second outage")
        await pilot.press("R")
        await settle(pilot)
        await pilot.press("y")
        await until(pilot, lambda: now_of("prv_stp_mx") == "accept", what="the reset shown")
        assert (await server.call("GET", "/_sim/providers/prv_stp_mx"))["incidents"] == []
