"""SVG screenshots of every screen on fixed data and a fixed clock, at 80x24, 120x35 and 200x50,
compared with the files in docs/screenshots/ (the README shows one).

A change to the UI changes them: look at the new files, then accept them with

    PAYORCH_UPDATE_SCREENSHOTS=1 pytest tests/tui/test_snapshots.py

A mismatch leaves the new rendering in the test's tmp dir and names it in the failure.

The SVG is Textual's and Rich's rendering, which changes between their releases: the files are
compared only under the versions that made them (recorded in docs/screenshots/README.md);
under others the comparison is skipped with a message saying how to re-make them.
"""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from textual.pilot import Pilot

from payorch_cli.tui.app import PayorchApp
from tests.tui.fakes import CHARGEBACK_ID, DRIFT_REPORT, PAID, FakeBackend
from tests.tui.helpers import settle

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
UPDATE = os.environ.get("PAYORCH_UPDATE_SCREENSHOTS") == "1"
RENDERER = f"textual {version('textual')}, rich {version('rich')}"
INDEX = SCREENSHOTS / "README.md"


def recorded_renderer() -> str | None:
    found = re.search(r"^Rendered with: (.+)$", INDEX.read_text(encoding="utf-8"), re.M)
    return found.group(1).strip() if found else None


def fixed_app(**kw: object) -> PayorchApp:
    app = PayorchApp(FakeBackend(**kw), monotonic=lambda: 0.0)  # type: ignore[arg-type]  # FakeBackend stands in for Backend
    app.drift_report = DRIFT_REPORT
    return app


async def check(app: PayorchApp, pilot: Pilot[None], name: str, tmp_path: Path) -> None:
    await settle(pilot)
    svg = app.export_screenshot(title=f"payorch tui: {name}")
    expected = SCREENSHOTS / f"{name}.svg"
    if UPDATE:
        expected.write_text(svg, encoding="utf-8")
        index = re.sub(
            r"^Rendered with: .+$",
            f"Rendered with: {RENDERER}",
            INDEX.read_text(encoding="utf-8"),
            flags=re.M,
        )
        INDEX.write_text(index, encoding="utf-8")
        return
    if recorded_renderer() != RENDERER:
        pytest.skip(
            f"screenshots were rendered with {recorded_renderer()}, this is {RENDERER}: "
            "re-make them with PAYORCH_UPDATE_SCREENSHOTS=1 and review the diff"
        )
    assert expected.exists(), f"no {expected}: run with PAYORCH_UPDATE_SCREENSHOTS=1 to make it"
    if svg != expected.read_text(encoding="utf-8"):
        actual = tmp_path / f"{name}.svg"
        actual.write_text(svg, encoding="utf-8")
        pytest.fail(
            f"{name} differs from {expected}; the new rendering is {actual}. If the change is "
            "intended, accept it with PAYORCH_UPDATE_SCREENSHOTS=1."
        )


async def chargeback_marked(app: PayorchApp, pilot: Pilot[None]) -> None:
    # The list view does not say which payment has a chargeback; the TUI learns it from the
    # chargeback.created event, as it would live.
    await settle(pilot)
    app.chargebacks.add(CHARGEBACK_ID)
    app.reload_all()


async def press(pilot: Pilot[None], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def transactions(app: PayorchApp, pilot: Pilot[None]) -> None:
    await chargeback_marked(app, pilot)


async def transactions_filtered(app: PayorchApp, pilot: Pilot[None]) -> None:
    await chargeback_marked(app, pilot)
    await press(pilot, "s", "s")  # status filter: completed


async def transaction_detail(app: PayorchApp, pilot: Pilot[None]) -> None:
    await settle(pilot)
    app.open_transaction(PAID["id"])


async def transaction_trace(app: PayorchApp, pilot: Pilot[None]) -> None:
    await transaction_detail(app, pilot)
    await press(pilot, "t")


async def balances(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "2")


async def deliveries(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "3")


async def delivery(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "3", "enter")


async def providers(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "5")


async def confirm_chargeback(app: PayorchApp, pilot: Pilot[None]) -> None:
    await settle(pilot)
    await press(pilot, "down", "c")  # chargeback on the completed PIX payment


async def advance_clock(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "a")


async def key_switcher(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "k")


async def requests(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "4")


async def request(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "4", "down", "down", "down", "down", "enter")


async def drift(app: PayorchApp, pilot: Pilot[None]) -> None:
    await press(pilot, "6", "down")


# Every screen (and dialog), each at the three sizes it is checked at: the smallest terminal the
# layout is made for, a common laptop one, and a wide one. `transactions.svg` (80x24) is the
# README's; the others are named NAME-WxH.svg.
SCREENS = {
    "transactions": transactions,
    "transactions-filtered": transactions_filtered,
    "transaction-detail": transaction_detail,
    "transaction-trace": transaction_trace,
    "balances": balances,
    "deliveries": deliveries,
    "delivery": delivery,
    "providers": providers,
    "confirm-chargeback": confirm_chargeback,
    "advance-clock": advance_clock,
    "key-switcher": key_switcher,
    "requests": requests,
    "request": request,
    "drift": drift,
}
SIZES = ((80, 24), (120, 35), (200, 50))


def shot_name(screen: str, size: tuple[int, int]) -> str:
    return screen if size == SIZES[0] else f"{screen}-{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
async def test_screenshot(screen: str, size: tuple[int, int], tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=size) as pilot:
        await SCREENS[screen](app, pilot)
        await check(app, pilot, shot_name(screen, size), tmp_path)


def test_every_screenshot_file_is_checked() -> None:
    made = {shot_name(screen, size) for screen in SCREENS for size in SIZES}
    assert {path.stem for path in SCREENSHOTS.glob("*.svg")} == made
    listed = INDEX.read_text(encoding="utf-8")
    assert all(f"`{screen}" in listed for screen in SCREENS)


async def test_a_refused_confirmation_sends_nothing() -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await confirm_chargeback(app, pilot)
        await press(pilot, "n")
        assert not app.backend.calls  # type: ignore[attr-defined]  # the app holds the FakeBackend, which records calls


async def test_providers_keys_start_an_outage_and_reset_after_asking() -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await press(pilot, "5", "down", "o")  # the second row: prv_cardhub
        await press(pilot, "R", "n")  # asked, refused: nothing sent
        await press(pilot, "R", "y")
        assert app.backend.calls == [  # type: ignore[attr-defined]  # the app holds the FakeBackend, which records calls
            "incident prv_cardhub outage 600",
            "reset providers",
        ]
        assert any("outage until 12:10:00" in text for _, _, text in app.notices), app.notices


async def test_providers_key_e_ends_the_selected_providers_incidents() -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 35)) as pilot:
        await press(pilot, "5", "e")  # the first row: prv_stp_mx, in an active outage
        await press(pilot, "down", "e")  # prv_cardhub: a decline scheduled for later
        await press(pilot, "down", "e")  # prv_orbita_cards: scripted out, but no incident
        assert app.backend.calls == [  # type: ignore[attr-defined]  # the app holds the FakeBackend, which records calls
            "end incidents prv_stp_mx",
            "end incidents prv_cardhub",
            "end incidents prv_orbita_cards",
        ]
        texts = [(title, text) for _, title, text in app.notices]
        assert ("prv_stp_mx", "outage ended at 12:00:00 (simulated)") in texts, texts
        assert ("prv_cardhub", "decline cancelled") in texts, texts
        assert (
            "prv_orbita_cards",
            "no incident in force or scheduled: nothing to end",
        ) in texts, texts
