"""Waiting for the TUI in Pilot tests (until its workers are idle, or a condition holds), and
reading what it shows."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

# Never finishes by design (the live stream): not waited for.
LONG_RUNNING = {"stream"}


async def settle(pilot: Pilot[None], timeout: float = 5.0) -> None:
    """Until no short worker runs and the screen has refreshed."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while time.monotonic() < deadline:
        busy = [w for w in app.workers if w.group not in LONG_RUNNING and w.is_running]
        if not busy:
            break
        await asyncio.sleep(0.02)
    await pilot.pause()
    await pilot.pause()


async def until(
    pilot: Pilot[None], condition: Callable[[], object], timeout: float = 5.0, what: str = ""
) -> float:
    """Poll `condition` (every 5 ms, yielding to the app and the server) until it is true;
    returns how long it took, in seconds."""
    started = time.perf_counter()
    while not condition():
        if time.perf_counter() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - started
    await pilot.pause()
    return elapsed


def screen_text(app: App[None]) -> str:
    """What the terminal shows, as plain text (one line per row), as a screenshot renders it."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system=None,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()
