"""Switching merchant/environment among `payorch keys`, the command palette, and NO_COLOR."""

from __future__ import annotations

import re

import pytest

from payorch_cli.tui.app import PayorchApp
from payorch_cli.tui.backend import Backend
from payorch_cli.tui.widgets.transactions import TransactionsTable
from tests.conftest import KEYS
from tests.tui.conftest import LiveServer
from tests.tui.fakes import FakeBackend
from tests.tui.helpers import settle, until


async def test_switch_to_another_merchant(server: LiveServer) -> None:
    mine = (await server.pay())["transactionId"]
    theirs = (
        await server.call(
            "POST", "/payments", {"amount": 9, "paymentMethodId": "sbx_spei"}, key=KEYS.other_sk
        )
    )["transactionId"]
    app = PayorchApp(Backend(server.url, KEYS.sandbox_sk), keys=[KEYS.other_sk])
    async with app.run_test(size=(100, 30)) as pilot:
        table = lambda: app.screen.query_one(TransactionsTable)  # noqa: E731
        await until(pilot, lambda: mine in table().rows, what="my row")
        await pilot.press("k")
        await settle(pilot)
        switcher = app.screen
        await until(pilot, lambda: bool(switcher.credentials), what="the keys")  # type: ignore[attr-defined]  # app.screen is the key switcher here
        # --api-key keys come first, then the fixtures' (payorch keys).
        assert switcher.credentials[1].key == KEYS.other_sk  # type: ignore[attr-defined]  # app.screen is the key switcher here
        assert len(switcher.credentials) > 5  # type: ignore[attr-defined]  # app.screen is the key switcher here
        await pilot.press("down", "enter")
        await until(pilot, lambda: theirs in table().rows, what="the other merchant's row")
        assert mine not in table().rows
        await until(
            pilot, lambda: app.identity is not None and "Fiesta" in app.identity.merchant_name
        )
        await until(pilot, lambda: app.connection == "live", what="their live stream")


async def test_command_palette_runs_an_action() -> None:
    backend = FakeBackend()
    app = PayorchApp(backend, monotonic=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"mark paid")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert backend.calls == [f"simulate {backend.payments().rows[0]['id']} paid"]


async def test_no_color_renders_in_greys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = PayorchApp(FakeBackend(), monotonic=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        svg = app.export_screenshot()
    assert app.no_color
    # The window chrome of the SVG frame (its three dots) is not the app's; the frame's
    # default text colour (#c5c8c6) is a near-grey.
    chrome = {"ff5f57", "febc2e", "28c840"}
    colours = set(re.findall(r"#([0-9a-fA-F]{6})\b", svg.lower())) - chrome
    coloured = {c for c in colours if _saturation(c) > 12}
    assert not coloured, coloured


def _saturation(hex_colour: str) -> int:
    channels = [int(hex_colour[i : i + 2], 16) for i in (0, 2, 4)]
    return max(channels) - min(channels)
