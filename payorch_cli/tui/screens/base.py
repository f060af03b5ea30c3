"""What every top-level screen shares: the header and footer, and how live data reaches it.

The app owns the connection; screens register with it on mount and get told three things:
a transaction changed (its new view, straight from an event: no request needed), some data
is stale (`balance`, `deliveries`, `transactions`: refetched now if the screen is showing,
else when it is shown again), or everything must be reloaded (reconnect, another key).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen

from payorch_cli.tui.backend import Backend, Identity
from payorch_cli.tui.widgets.footer import FittingFooter
from payorch_cli.tui.widgets.header import StatusHeader

if TYPE_CHECKING:
    from payorch_cli.client import ApiError

# What each happening makes stale: the app marks the kinds, each screen reloads those it
# `WATCHES` (refetched now if it is showing, else when it is shown again). The one table of both.
STALE_AFTER: dict[str, frozenset[str]] = {
    # Any event from the live stream (a transaction event also updates its row directly).
    "event": frozenset({"balance", "deliveries"}),
    # A simulate action the TUI sent (the stream brings the same change; kept right without it).
    "simulated": frozenset({"balance", "deliveries"}),
    # A webhook delivery replayed from the Deliveries screen.
    "replayed": frozenset({"deliveries"}),
    # The simulated clock moved: settlements, releases, retries and incidents may have run.
    "clock_moved": frozenset({"balance", "deliveries", "transactions"}),
    # A transaction changed under a filtered list: the page says whether it still belongs.
    "filtered_row_changed": frozenset({"transactions"}),
}
STALE_KINDS: frozenset[str] = frozenset().union(*STALE_AFTER.values())


@runtime_checkable
class Host(Protocol):
    """What screens use of the app that runs them (`PayorchApp`, which imports the screens, so it
    is named here by its shape): the session, what the live stream taught it, and its actions."""

    backend: Backend
    identity: Identity | None
    connection: str
    chargebacks: set[str]
    event_log: deque[dict[str, Any]]
    drift_report: Path | None

    @property
    def online(self) -> bool: ...

    def register_view(self, view: LiveScreen) -> None: ...

    def unregister_view(self, view: LiveScreen) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def open_transaction(self, transaction_id: str) -> None: ...

    def request_simulate(self, transaction_id: str, action: str) -> None: ...

    def request_replay(self, delivery: dict[str, Any]) -> None: ...


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
    # Which kinds of staleness (STALE_KINDS) this screen cares about.
    WATCHES: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A misspelt kind would never be marked: refuse it when the screen is defined.
        unknown = cls.WATCHES - STALE_KINDS
        if unknown:
            raise TypeError(f"{cls.__name__} watches unknown stale kinds {sorted(unknown)}")

    def __init__(self) -> None:
        super().__init__()
        self._stale: set[str] = set()
        self._reload_timer: Any = None

    @property
    def payorch(self) -> Host:
        # Textual types Screen.app as App; these screens run in PayorchApp, a Host.
        return cast(Host, self.app)

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

    def mark_stale(self, kinds: AbstractSet[str], *, soon: float = 0.1) -> None:
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
