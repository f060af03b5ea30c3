"""What every screen shows at 80x24, 120x35 and 200x50: a footer whose keys are never cut (those
that do not fit are left out whole; the palette key always shows), amounts right-aligned, and
only the simulate actions the selected payment's status allows."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot
from textual.widgets._footer import FooterKey

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.screens.transactions import TransactionsScreen
from payorch_cli.tui.widgets.footer import FittingFooter
from payorch_cli.tui.widgets.transactions import TransactionsTable
from tests.tui.fakes import (
    CHARGEBACK_ID,
    DELIVERIES,
    DRIFT_REPORT,
    REQUESTS,
    TRANSACTIONS,
    FakeBackend,
)
from tests.tui.helpers import screen_text, settle

SIZES = ((80, 24), (120, 35), (200, 50))
# How to reach each main screen and the screens pushed over them.
SCREENS = {
    "transactions": (),
    "transaction-detail": ("enter",),
    "balances": ("2",),
    "deliveries": ("3",),
    "delivery": ("3", "enter"),
    "providers": ("5",),
    "transaction-trace": ("enter", "t"),
    "requests": ("4",),
    "request": ("4", "down", "enter"),
    "drift": ("6",),
}
# At 120 columns the transactions footer shows every key: the screen keys as one (`2-6
# Screens`), since written out they would push `k Key` and `q Quit` off; at 200 columns every
# screen key is written out.
ALL_KEYS = ("Search", "Status", "Method", "Screens", "Clock+", "Key", "Quit")
SCREEN_NAMES = ("Balances", "Deliveries", "Requests", "Providers", "Drift")
# At 80 columns each screen's footer keeps its own actions, the screen keys (as one), the clock
# and the key switcher; the filter keys its filter bar already shows may give way, and on a
# pending payment's detail (five actions of its own) the key switcher does (the palette has it).
OWN_KEYS = {
    "transactions": ("Paid", "Failed", "Expired"),
    "transaction-detail": ("Back", "Paid", "Failed", "Expired", "Trace"),
    "balances": (),
    "deliveries": ("Replay",),
    "delivery": ("Back", "Replay"),
    "providers": ("Outage 10m", "End incidents", "Reset all"),
    "transaction-trace": ("Back", "Trace"),
    "requests": ("Status", "Method", "Path"),
    "request": ("Back",),
    "drift": (),
}


def fixed_app(**kw: object) -> PayorchApp:
    app = PayorchApp(FakeBackend(**kw), monotonic=lambda: 0.0)  # type: ignore[arg-type]  # FakeBackend stands in for Backend
    app.drift_report = DRIFT_REPORT
    return app


async def press(pilot: Pilot[None], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def footer_keys(app: PayorchApp) -> list[str]:
    """The descriptions of the keys the footer shows, palette excluded, in order."""
    footer = app.screen.query_one(FittingFooter)
    return [
        key.description for key in footer.query(FooterKey) if not key.has_class("-command-palette")
    ]


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
async def test_the_footer_never_cuts_a_key(screen: str, size: tuple[int, int]) -> None:
    app = fixed_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await press(pilot, *SCREENS[screen])
        footer = app.screen.query_one(FittingFooter)
        [palette] = footer.query(".-command-palette")
        keys = [k for k in footer.query(FooterKey) if k is not palette]
        assert keys, "the footer shows keys"
        for key in keys:
            assert key.region.right <= palette.region.x, (key.description, key.region)
        last_line = screen_text(app).splitlines()[-1]
        for key in keys:
            assert f"{key.key_display} {key.description}" in last_line, last_line
        assert "^p palette" in last_line


async def test_at_120_columns_the_transactions_footer_shows_every_key() -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        shown = footer_keys(app)
        assert [k for k in ALL_KEYS if k not in shown] == []
        assert "2-6 Screens" in screen_text(app).splitlines()[-1]  # not 1: it is shown


async def test_at_200_columns_the_footer_writes_every_screen_key_out() -> None:
    app = fixed_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        shown = footer_keys(app)
        expected = [k for k in ALL_KEYS if k != "Screens"] + list(SCREEN_NAMES)
        assert [k for k in expected if k not in shown] == []
        assert "Transactions" not in shown and "Screens" not in shown


@pytest.mark.parametrize("screen", list(SCREENS))
async def test_at_80_columns_every_footer_keeps_its_actions_the_screens_clock_and_key(
    screen: str,
) -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, *SCREENS[screen])
        shown = footer_keys(app)
        crowded = screen in ("transaction-detail", "transaction-trace")
        wanted = (*OWN_KEYS[screen], "Screens", "Clock+", *(() if crowded else ("Key",)))
        assert [k for k in wanted if k not in shown] == [], shown


async def test_local_amounts_are_right_aligned() -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
        ends = set()
        for tx in TRANSACTIONS:
            local = f"{tx['amountLocal']:,.2f} {tx['currencyLocal']}"
            [line] = [line for line in lines if tx["id"] in line]
            ends.add(line.index(local) + len(local))
        assert len(ends) == 1, ends
        header = next(line for line in lines if "Transaction" in line and "Local" in line)
        assert header.index("Local") + len("Local") in ends


async def test_movement_amounts_are_right_aligned_under_their_header() -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await press(pilot, "2")
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "Movement" in line and "Amount" in line)
        end = header.index("Amount") + len("Amount")
        rows = [line for line in lines if "chargeback_freeze" in line]
        assert rows and all(line[:end].endswith("240.00") for line in rows), rows


def rows_by_status() -> dict[str, int]:
    """The index of a row of each kind in the fake's list (first one wins)."""
    found: dict[str, int] = {}
    for index, tx in enumerate(TRANSACTIONS):
        kind = "chargeback" if tx["id"] == CHARGEBACK_ID else tx["status"]
        found.setdefault(kind, index)
    return found


OFFERED = {
    "pending": ["Paid", "Failed", "Expired"],
    "completed": ["Refunded", "Chargeback"],
    "chargeback": [],  # completed, but charged back: neither refund nor a second chargeback
    "failed": [],
    "refunded": [],
    "expired": [],
}


@pytest.mark.parametrize("kind", list(OFFERED))
async def test_only_the_actions_a_status_allows_are_offered(kind: str) -> None:
    backend = FakeBackend()
    app = PayorchApp(backend, monotonic=lambda: 0.0)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        app.chargebacks.add(CHARGEBACK_ID)
        app.reload_all()
        await settle(pilot)
        table = app.screen.query_one(TransactionsTable)
        table.move_cursor(row=rows_by_status()[kind])
        await settle(pilot)
        actions = {"Paid", "Failed", "Expired", "Refunded", "Chargeback"}
        offered = [k for k in footer_keys(app) if k in actions]
        assert offered == OFFERED[kind]
        # A key whose action does not apply does nothing, and the palette does not list it.
        names = ["Paid", "Failed", "Expired", "Refunded", "Chargeback"]
        for key, action in zip("pfxuc", names, strict=True):
            if action not in offered:
                await press(pilot, key)
        assert isinstance(app.screen, TransactionsScreen) and backend.calls == []
        commands = [c.title for c in app.get_system_commands(app.screen)]
        marks = [c.split(":")[0].removeprefix("Mark ") for c in commands if c.startswith("Mark ")]
        assert marks == [a.lower() for a in OFFERED[kind]]
        # The detail screen offers the same.
        await press(pilot, "enter")
        detail = [k for k in footer_keys(app) if k in actions]
        assert detail == OFFERED[kind]


async def test_production_keys_are_offered_no_simulate_action() -> None:
    app = fixed_app(environment="production")
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        assert app.identity is not None and not app.identity.sandbox
        assert not {"Paid", "Failed", "Expired"} & set(footer_keys(app))


async def test_at_80_columns_transaction_and_order_ids_show_whole() -> None:
    # The order id spilled off the right edge, cut to one character: the local amount and,
    # if need be, the creation time and method give way instead.
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
        for tx in TRANSACTIONS:
            [line] = [line for line in lines if tx["id"] in line]
            assert tx["status"] in line
            if tx["merchantOrderId"]:
                assert f" {tx['merchantOrderId']}" in line, line
        table = app.screen.query_one(TransactionsTable)
        assert "local" not in table.shown_columns and "order" in table.shown_columns
        await pilot.resize_terminal(120, 35)  # wider: the local amount comes back
        await settle(pilot)
        assert table.shown_columns == [
            "created",
            "id",
            "status",
            "amount",
            "local",
            "method",
            "order",
        ]


async def test_at_80_columns_every_request_shows_its_status() -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await press(pilot, "4")
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "Method" in line and "Path" in line)
        status_at = header.index("Status")
        for request in REQUESTS:
            [line] = [line for line in lines if f"{request['durationMs']:.1f}" in line]
            assert line[status_at : status_at + 3] == str(request["status"]), line
        # The long path's query is cut in the middle: the path, the query's start and its end
        # (the last filters) show.
        [long] = [line for line in lines if "/api/v1/payments?status=" in line]
        assert long and long.split("…")[1].split()[0].endswith("limit=50")


def test_the_order_id_outlasts_the_columns_that_give_way() -> None:
    from payorch_cli.tui.present import fitting_columns

    widths = {"created": 11, "id": 20, "status": 9, "local": 12, "method": 6, "order": 10}
    give_way = ("local", "created", "method")
    assert fitting_columns(widths, 200, give_way) == list(widths)
    assert fitting_columns(widths, 78, give_way) == ["created", "id", "status", "method", "order"]
    assert fitting_columns(widths, 60, give_way) == ["id", "status", "method", "order"]
    assert fitting_columns(widths, 10, give_way) == ["id", "status", "order"]  # ids stay
    assert fitting_columns(widths, 0, give_way) == list(widths)  # not laid out yet


async def test_at_80_columns_every_delivery_id_shows_whole() -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await press(pilot, "3")
        text = screen_text(app)
        for delivery in DELIVERIES:
            assert f" {delivery['id']} " in text, delivery["id"]


async def test_at_120_columns_merchant_path_and_endpoint_show_whole() -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await press(pilot, "4")
        lines = screen_text(app).splitlines()
        for request in REQUESTS:
            [line] = [line for line in lines if f"{request['durationMs']:.1f}" in line]
            path = request["path"] + ("?" if request["query"] else " ")
            assert f" {path}" in line, line  # the path whole (a long query is cut after it)
            who = f"{request['merchantId']}/sandbox" if request["merchantId"] else "(no credential)"
            assert f" {who} " in line, line
            if request["errorCode"]:
                assert f" {request['errorCode']} " in line, line
        await press(pilot, "3")
        text = screen_text(app)
        assert text.count(" http://127.0.0.1:3000/webhooks ") == 2, text
        for delivery in DELIVERIES:
            assert f" {delivery['id']} " in text, delivery["id"]
