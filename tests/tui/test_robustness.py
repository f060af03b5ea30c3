"""Bad answers never crash the TUI: they become notifications, and what can be shown is."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.widgets.transactions import TransactionsTable
from tests.tui.helpers import settle, until


async def garbage_events(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b": connected\n\ndata: not json\n\ndata: [1, 2]\n\n")
    await response.write(b'data: {"type": "payment.completed", "data": {"id": 7}}\n\n')
    await response.write(b'data: {"type": "payment.failed", "data": "TXN-X"}\n\n')
    return response  # then the stream ends: the TUI reconnects, again and again


def routes() -> web.Application:
    app = web.Application()
    text = "<html>surprise</html>"
    payments = {
        "data": [
            1,
            "x",
            {"id": "TXN-X", "status": 5, "amount": "lots", "timestamps": "no", "fees": []},
            {"id": "TXN-X", "status": "pending"},  # a duplicate id
            {"status": "pending", "amountLocal": {"weird": True}},
        ],
        "pagination": "bad",
    }
    answers: dict[str, tuple[int, object]] = {
        "/api/v1/ping": (200, text),
        "/api/v1/payments": (200, payments),
        "/api/v1/payments/TXN-X": (200, {"id": "TXN-X", "fees": "x", "timestamps": [1]}),
        "/api/v1/me/balance": (200, []),
        "/api/v1/me/payout/balance": (200, {"balances": "none"}),
        "/_sim/clock": (500, "oops"),
        "/api/v1/webhooks": (200, {"data": [{"id": 5}, {"id": "wh_x"}]}),
        "/api/v1/webhooks/wh_x/deliveries": (200, {"data": [{"attempts": "no", "id": None}]}),
    }

    async def answer(request: web.Request) -> web.Response:
        status, body = answers.get(request.path, (404, "<h1>no</h1>"))
        if isinstance(body, str):
            return web.Response(status=status, text=body, content_type="text/html")
        return web.json_response(body, status=status)

    app.router.add_get("/_sim/events", garbage_events)
    app.router.add_route("*", "/{tail:.*}", answer)
    return app


@pytest.fixture
async def garbage_url() -> AsyncIterator[str]:
    runner = web.AppRunner(routes(), handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def test_garbage_answers_become_notifications(garbage_url: str) -> None:
    app = PayorchApp(Backend(garbage_url, "sk_test_whatever"))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(TransactionsTable)
        await until(pilot, lambda: "TXN-X" in table.rows, what="the one usable row")
        codes = lambda: " ".join(message for _, _, message in app.notices)  # noqa: E731
        await until(pilot, lambda: "bad_event" in codes(), what="a garbled event reported")
        await until(pilot, lambda: "bad_response" in codes(), what="a bad answer reported")
        for key in ("enter", "escape", "2", "3", "1", "p", "r"):
            await pilot.press(key)
            await settle(pilot)
        assert app.is_running
        assert table.status_of("TXN-X") == "5"


async def test_a_stream_that_ends_at_once_is_retried_with_growing_delays(
    garbage_url: str,
) -> None:
    """The garbage stream opens, then ends: each opening is no working connection, so the
    waits grow (0.25, 0.5, 1 s...) instead of starting again at 0.25 s, which reconnected and
    reloaded every screen four times a second."""
    app = PayorchApp(Backend(garbage_url, "sk_test_whatever"))
    async with app.run_test(size=(80, 24)) as pilot:
        seen: list[str] = []

        def third_wait() -> bool:
            if app.connection_detail and app.connection_detail not in seen:
                seen.append(app.connection_detail)
            return "retry in 1s" in seen

        await until(pilot, third_wait, what="the third reconnection's wait")
        assert seen[:3] == ["retry in 0.25s", "retry in 0.5s", "retry in 1s"], seen


def test_the_app_is_the_host_its_screens_expect() -> None:
    """Screens know the app by its shape (`Host`), not by importing it (the app imports them):
    the app must keep every member they use."""
    from payorch_cli.tui.app import PayorchApp
    from payorch_cli.tui.screens.base import Host
    from tests.tui.fakes import FakeBackend

    assert isinstance(PayorchApp(FakeBackend(), monotonic=lambda: 0.0), Host)


def test_stale_kinds_are_one_table_and_a_misspelt_one_is_refused() -> None:
    """Every kind a screen watches is one some happening marks (STALE_AFTER), and a screen that
    watches another is refused when it is defined, not left never reloading."""
    from payorch_cli.tui.screens.base import STALE_AFTER, STALE_KINDS, LiveScreen
    from payorch_cli.tui.screens.main import MAIN_SCREENS

    marked = frozenset().union(*STALE_AFTER.values())
    assert marked == STALE_KINDS
    for main in MAIN_SCREENS:
        assert main.screen.WATCHES <= STALE_KINDS, main.mode
    with pytest.raises(TypeError, match="balanse"):
        type("Typo", (LiveScreen,), {"WATCHES": frozenset({"balanse"})})
