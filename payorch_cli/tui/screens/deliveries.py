"""Webhook deliveries across the key's subscriptions, and one delivery opened.

Deliveries are made by events and attempted in the background, so after each event (and after
the clock moves, which runs due retries) the list is refetched now and a few times shortly
after, when the attempts have most likely finished: no standing poll of the list.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from payorch_cli.client import ApiError
from payorch_cli.tui import present
from payorch_cli.tui.messages import Failed
from payorch_cli.tui.screens.base import LiveScreen
from payorch_cli.tui.widgets.deliveries import AttemptsTable, DeliveriesTable, RequestPanel

FOLLOW_UPS = (1.5, 5.0, 11.0)  # the first look is the coalesced reload itself


class DeliveriesScreen(LiveScreen):
    WATCHES = frozenset({"deliveries"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("R", "replay", "Replay"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.deliveries: dict[str, dict[str, Any]] = {}
        self._follow_ups: list[Any] = []

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static(id="deliveries-summary")
        yield DeliveriesTable(id="deliveries")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one(DeliveriesTable).focus()

    def mark_stale(self, kinds: AbstractSet[str], *, soon: float = 0.1) -> None:
        super().mark_stale(kinds, soon=soon)
        if "deliveries" in kinds and self.is_current:
            for timer in self._follow_ups:
                timer.stop()
            self._follow_ups = [self.set_timer(d, self._follow_up) for d in FOLLOW_UPS]

    def _follow_up(self) -> None:
        self.reload(quiet=True)

    def reload(self, *, quiet: bool = False) -> None:
        self._fetch()

    @work(thread=True, group="deliveries", exclusive=True, exit_on_error=False)
    def _fetch(self) -> None:
        try:
            deliveries = self.payorch.backend.deliveries()
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading deliveries", exc))
            return
        self.deliver(self._show, deliveries)

    def _show(self, deliveries: list[dict[str, Any]]) -> None:
        self.deliveries = {str(d.get("id")): d for d in deliveries}
        self.query_one(DeliveriesTable).show(deliveries)
        hooks = {str(d.get("webhookId")) for d in deliveries}
        summary = Text.assemble(
            (f" {len(deliveries)} deliveries", "bold"),
            (f" to {len(hooks)} subscription(s), newest first", "dim"),
            ("   enter open · R replay", "dim"),
        )
        if not deliveries:
            summary = Text(
                " No deliveries yet: subscribe with POST /webhooks or `payorch listen`.",
                style="dim",
            )
        self.query_one("#deliveries-summary", Static).update(summary)

    # -- actions ---------------------------------------------------------------------------------

    def selected_delivery(self) -> dict[str, Any] | None:
        delivery_id = self.query_one(DeliveriesTable).selected_id()
        return None if delivery_id is None else self.deliveries.get(delivery_id)

    def action_replay(self) -> None:
        delivery = self.selected_delivery()
        if delivery is None:
            self.notify("No delivery selected.", severity="warning")
            return
        self.payorch.request_replay(delivery)

    def action_open(self) -> None:
        delivery = self.selected_delivery()
        if delivery is not None:
            self.app.push_screen(DeliveryScreen(delivery))

    @on(DataTable.RowSelected, "#deliveries")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()


class DeliveryScreen(LiveScreen):
    """One delivery: the request as sent (headers, body) and every attempt."""

    WATCHES = frozenset({"deliveries"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("R", "replay", "Replay"),
    ]

    def __init__(self, delivery: dict[str, Any]) -> None:
        super().__init__()
        self.delivery = delivery

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static(id="delivery-title")
        with VerticalScroll(id="request-scroll"):
            yield RequestPanel(id="request")
        yield AttemptsTable(id="attempts")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self._show(self.delivery)

    def reload(self, *, quiet: bool = False) -> None:
        self._fetch()

    @work(thread=True, group="delivery", exclusive=True, exit_on_error=False)
    def _fetch(self) -> None:
        try:
            deliveries = self.payorch.backend.deliveries()
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading the delivery", exc, quiet=True))
            return
        for delivery in deliveries:
            if delivery.get("id") == self.delivery.get("id"):
                self.deliver(self._show, delivery)

    def _show(self, delivery: dict[str, Any]) -> None:
        self.delivery = delivery
        self.query_one("#delivery-title", Static).update(
            Text.assemble(
                (present.text(delivery.get("id")), "bold"),
                "  ",
                present.delivery_status_text(delivery.get("status")),
                "  ",
                present.text(delivery.get("eventType")),
                f"  · {present.text(delivery.get('attemptCount'))} attempt(s)",
            )
        )
        self.query_one(RequestPanel).show(delivery)
        self.query_one(AttemptsTable).show(delivery)

    def action_replay(self) -> None:
        self.payorch.request_replay(self.delivery)
