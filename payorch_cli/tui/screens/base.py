"""What every top-level screen shares: the header and footer, and how live data reaches it.

The app owns the connection; screens register with it on mount and get told three things:
a transaction changed (its new view, straight from an event: no request needed), some data
is stale (`balance`, `deliveries`, `transactions`: refetched now if the screen is showing,
else when it is shown again), or everything must be reloaded (reconnect, another key).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen

from payorch_cli.tui.widgets.footer import FittingFooter
from payorch_cli.tui.widgets.header import StatusHeader

if TYPE_CHECKING:
    from payorch_cli.client import ApiError
    from payorch_cli.tui.app import PayorchApp

STALE_KINDS = frozenset({"balance", "deliveries", "transactions"})
# The control plane's answer to a production key (design.md 1.3).
SANDBOX_ONLY = "production_key_refused"


def sandbox_only(error: ApiError) -> bool:
    """Whether a refusal only means the key is a production one: the screen says so in place,
    not as an error notification (its data comes from the sandbox-only control plane)."""
    return error.code == SANDBOX_ONLY


def needs_sandbox_text(what: str) -> Text:
    """What a screen shows instead of its data under a production key."""
    return Text.assemble(
        (f" {what} needs a sandbox key", "bold yellow"),
        (": the simulator's control plane refuses production keys. Press k to switch.", "dim"),
    )


class LiveScreen(Screen[None]):
    # Which kinds of staleness this screen cares about.
    WATCHES: frozenset[str] = frozenset()

    def __init__(self) -> None:
        super().__init__()
        self._stale: set[str] = set()
        self._reload_timer: Any = None

    @property
    def payorch(self) -> PayorchApp:
        return self.app  # type: ignore[return-value]  # Textual types Screen.app as App; these screens run in PayorchApp

    def compose_header(self) -> ComposeResult:
        yield StatusHeader()

    def compose_footer(self) -> ComposeResult:
        yield FittingFooter()

    def on_mount(self) -> None:
        self.payorch.register_view(self)
        self.reload()

    def on_unmount(self) -> None:
        self.payorch.unregister_view(self)

    def on_screen_resume(self) -> None:
        if self._stale:
            self._stale.clear()
            self.reload()

    # -- told by the app -------------------------------------------------------------------------

    def apply_transaction(self, tx: dict[str, Any]) -> None:
        """A transaction's current view (from an event or a fetch)."""

    def mark_stale(self, kinds: set[str], *, soon: float = 0.1) -> None:
        wanted = kinds & self.WATCHES
        if not wanted:
            return
        if not self.is_current:
            self._stale |= wanted
            return
        # Coalesce bursts (one simulate fires two or three events) into one reload.
        if self._reload_timer is None:
            self._reload_timer = self.set_timer(soon, self._reload_now)

    def _reload_now(self) -> None:
        self._reload_timer = None
        self.reload(quiet=True)

    def reload(self, *, quiet: bool = False) -> None:
        """Fetch everything this screen shows (in workers)."""

    # -- helpers for workers ---------------------------------------------------------------------

    def deliver(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run `callback(*args)` on the UI loop from a worker thread; dropped after exit."""
        # After exit there is nothing to show it on: the call raises RuntimeError.
        with contextlib.suppress(RuntimeError):
            self.app.call_from_thread(self._guarded, callback, *args)

    def _guarded(self, callback: Callable[..., Any], *args: Any) -> None:
        if not self.is_attached:
            return
        try:
            callback(*args)
        except Exception as exc:  # odd data must not take the UI down
            self.notify(f"Could not show the answer: {exc!r}", severity="error", title="display")
