"""One transaction: all its fields, FX and fees, and below either its events and deliveries in
time order or its internal cascade trace (`t` switches)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from payorch_cli.client import ApiError
from payorch_cli.tui import present
from payorch_cli.tui.backend import simulate_actions
from payorch_cli.tui.messages import Failed
from payorch_cli.tui.screens.base import LiveScreen
from payorch_cli.tui.widgets.detail import (
    BreakdownPanel,
    FieldsPanel,
    TimelineTable,
    TraceTable,
    involves,
    timeline,
)

# After an event, deliveries are attempted in the background: look again when they are likely
# done (a local endpoint answers in milliseconds; an attempt times out after 10 s).
FOLLOW_UPS = (0.3, 1.5, 5.0, 11.0)


class TransactionScreen(LiveScreen):
    WATCHES = frozenset({"deliveries"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
        Binding("p", "simulate('paid')", "Paid"),
        Binding("f", "simulate('failed')", "Failed"),
        Binding("x", "simulate('expired')", "Expired"),
        Binding("u", "simulate('refunded')", "Refunded"),
        Binding("c", "simulate('chargeback')", "Chargeback"),
        Binding("t", "toggle_trace", "Trace"),
    ]

    def __init__(self, transaction_id: str) -> None:
        super().__init__()
        self.transaction_id = transaction_id
        self.tx: dict[str, Any] | None = None
        self.deliveries: list[dict[str, Any]] = []
        self.trace: dict[str, Any] = {}
        self._follow_ups: list[Any] = []

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static(Text(self.transaction_id, style="bold"), id="detail-title")
        with Horizontal(id="detail-top"):
            with VerticalScroll(id="fields-scroll"):
                yield FieldsPanel(id="fields")
            with VerticalScroll(id="breakdown-scroll"):
                yield BreakdownPanel(id="breakdown")
        with TabbedContent(id="detail-tabs"):
            with TabPane("Timeline", id="timeline-pane"):
                yield TimelineTable(id="timeline")
            with TabPane("Cascade trace", id="trace-pane"):
                yield TraceTable(id="trace")
        yield from self.compose_footer()

    # -- loading ---------------------------------------------------------------------------------

    def reload(self, *, quiet: bool = False) -> None:
        self._fetch()

    @work(thread=True, group="detail", exclusive=True, exit_on_error=False)
    def _fetch(self) -> None:
        backend = self.payorch.backend
        try:
            tx = backend.payment(self.transaction_id)
        except ApiError as exc:
            self.payorch.post_message(Failed(f"Loading {self.transaction_id}", exc))
            return
        try:
            deliveries = [
                d for d in backend.deliveries() if involves(d.get("event"), self.transaction_id)
            ]
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading deliveries", exc, quiet=True))
            deliveries = self.deliveries
        try:
            trace = backend.trace(self.transaction_id)
        except ApiError as exc:  # a server from before the trace, or a key of another merchant
            self.payorch.post_message(Failed("Loading the trace", exc, quiet=True))
            trace = self.trace
        self.deliver(self._show, tx, deliveries, trace)

    def _show(
        self,
        tx: dict[str, Any],
        deliveries: list[dict[str, Any]],
        trace: dict[str, Any] | None = None,
    ) -> None:
        self.tx, self.deliveries = tx, deliveries
        if trace is not None:
            self.trace = trace
            self.query_one(TraceTable).show(trace)
        chargeback = self.transaction_id in self.payorch.chargebacks
        title = Text.assemble(
            (self.transaction_id, "bold"),
            "  ",
            present.status_text(tx.get("status"), chargeback=chargeback),
            "  ",
            present.money(tx.get("amount"), "USD"),
            "  ",
            present.text(tx.get("paymentMethod")),
            " · ",
            present.text(tx.get("country")),
        )
        self.query_one("#detail-title", Static).update(title)
        self.query_one(FieldsPanel).show(tx, chargeback=chargeback)
        self.query_one(BreakdownPanel).show(tx)
        self._show_timeline()
        self.refresh_bindings()

    def _show_timeline(self) -> None:
        if self.tx is None:
            return
        events = [e for e in self.payorch.event_log if involves(e, self.transaction_id)]
        self.query_one(TimelineTable).show(timeline(self.tx, events, self.deliveries))

    # -- live ------------------------------------------------------------------------------------

    def apply_transaction(self, tx: dict[str, Any]) -> None:
        if tx.get("id") == self.transaction_id:
            self._guarded(self._show, {**(self.tx or {}), **tx}, self.deliveries)
            for timer in self._follow_ups:
                timer.stop()
            self._follow_ups = [self.set_timer(delay, self.reload) for delay in FOLLOW_UPS]

    # -- actions ---------------------------------------------------------------------------------

    def selected_transaction(self) -> str | None:
        return self.transaction_id

    def applicable_actions(self) -> tuple[str, ...]:
        """The simulate actions this payment's status allows (the footer and the palette offer
        only these; none until it has loaded)."""
        identity = self.payorch.identity
        return simulate_actions(
            self.tx,
            chargeback=self.transaction_id in self.payorch.chargebacks,
            sandbox=identity is None or identity.sandbox,
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "simulate":
            return parameters[0] in self.applicable_actions()
        return True

    def action_toggle_trace(self) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = "trace-pane" if tabs.active == "timeline-pane" else "timeline-pane"

    def action_simulate(self, action: str) -> None:
        self.payorch.request_simulate(self.transaction_id, action)
