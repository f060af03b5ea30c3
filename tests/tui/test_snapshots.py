"""SVG screenshots of every screen on fixed data and a fixed clock, compared with the files in
docs/screenshots/ (which the README shows).

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
from tests.tui.fakes import CHARGEBACK_ID, PAID, FakeBackend
from tests.tui.helpers import settle

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
UPDATE = os.environ.get("PAYORCH_UPDATE_SCREENSHOTS") == "1"
RENDERER = f"textual {version('textual')}, rich {version('rich')}"
INDEX = SCREENSHOTS / "README.md"


def recorded_renderer() -> str | None:
    found = re.search(r"^Rendered with: (.+)$", INDEX.read_text(encoding="utf-8"), re.M)
    return found.group(1).strip() if found else None


def fixed_app(**kw: object) -> PayorchApp:
    return PayorchApp(FakeBackend(**kw), monotonic=lambda: 0.0)  # type: ignore[arg-type]


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


async def test_transactions(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await chargeback_marked(app, pilot)
        await check(app, pilot, "transactions", tmp_path)


async def test_transactions_wide(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await chargeback_marked(app, pilot)
        await pilot.press("s", "s")  # status filter: completed
        await check(app, pilot, "transactions-filtered-wide", tmp_path)


async def test_transaction_detail(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.open_transaction(PAID["id"])
        await check(app, pilot, "transaction-detail", tmp_path)


async def test_balances(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await check(app, pilot, "balances", tmp_path)


async def test_deliveries(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("3")
        await check(app, pilot, "deliveries", tmp_path)


async def test_delivery_opened(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("enter")
        await check(app, pilot, "delivery", tmp_path)


async def test_confirm_destructive(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("down", "c")  # chargeback on the completed PIX payment
        await check(app, pilot, "confirm-chargeback", tmp_path)
        await pilot.press("n")
        await settle(pilot)
        assert not app.backend.calls  # type: ignore[attr-defined]


async def test_clock_dialog(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await check(app, pilot, "advance-clock", tmp_path)


@pytest.mark.parametrize(
    "size, name",
    [((80, 24), "requests"), ((120, 35), "requests-wide"), ((200, 50), "requests-huge")],
)
async def test_requests(tmp_path: Path, size: tuple[int, int], name: str) -> None:
    app = fixed_app()
    async with app.run_test(size=size) as pilot:
        await pilot.press("4")
        await check(app, pilot, name, tmp_path)


async def test_request_opened(tmp_path: Path) -> None:
    app = fixed_app()
    async with app.run_test(size=(100, 35)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("down", "down", "down", "down", "enter")
        await check(app, pilot, "request", tmp_path)
