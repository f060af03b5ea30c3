"""Transactions: one server page at a time, filtered and searched on the server, updated live.

Live without polling the list: a status change arrives as an event whose `data` is the
transaction's view, and its row is rewritten in place. Creating a payment emits no event, so
a probe asks for the head of the list (`limit=1`: one row and the total) twice a second and
refetches page 1 only when the head or the total moved; on a later page it just counts what is
new above, so the rows never shift under the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Input

from payorch_cli.client import ApiError
from payorch_cli.tui.backend import METHODS, PAGE_SIZE, STATUSES, Page, simulate_actions
from payorch_cli.tui.messages import Failed
from payorch_cli.tui.screens.base import STALE_AFTER, LiveScreen
from payorch_cli.tui.widgets.transactions import (
    BalanceStrip,
    FilterSummary,
    Pager,
    TransactionsTable,
)

PROBE_SECONDS = 0.5  # creations show within a second without an event for them
POLL_SECONDS = 2.0  # live keys get no event stream: the visible page is refetched instead


@dataclass(frozen=True, slots=True)
class Query:
    page: int = 0
    status: str | None = None
    method: str | None = None
    search: str | None = None  # part of an id or of a merchantOrderId (Backend.search_payments)


def _cycle(options: tuple[str, ...], current: str | None, step: int) -> str | None:
    values: list[str | None] = [None, *options]
    return values[(values.index(current) + step) % len(values)]


class TransactionsScreen(LiveScreen):
    WATCHES = frozenset({"balance", "transactions"})
    # The filter bar shows these keys (`/ search…`, `s status:all  m method:all`): a narrow
    # footer leaves them out for the others.
    HINTED_ELSEWHERE: ClassVar[frozenset[str]] = frozenset(
        {"search", "cycle_status(1)", "cycle_method(1)"}
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("p", "simulate('paid')", "Paid"),
        Binding("f", "simulate('failed')", "Failed"),
        Binding("x", "simulate('expired')", "Expired"),
        Binding("u", "simulate('refunded')", "Refunded"),
        Binding("c", "simulate('chargeback')", "Chargeback"),
        Binding("slash", "search", "Search"),
        Binding("s", "cycle_status(1)", "Status"),
        Binding("S", "cycle_status(-1)", "Status", show=False),
        Binding("m", "cycle_method(1)", "Method"),
        Binding("M", "cycle_method(-1)", "Method", show=False),
        Binding("right_square_bracket", "page(1)", "Next page", show=False),
        Binding("left_square_bracket", "page(-1)", "Previous page", show=False),
        Binding("escape", "clear", "Clear", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.query_state = Query()
        self.page: Page | None = None
        self.newer = 0
        self._generation = 0
        self._probing = False
        self._head: tuple[str | None, int] | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        with Horizontal(id="filters"):
            yield Input(
                placeholder="/ search TXN-… id or merchantOrderId", id="search", compact=True
            )
            yield FilterSummary(id="filter-summary")
        yield TransactionsTable(id="transactions")
        with Horizontal(id="status-lines"):
            yield Pager(id="pager")
        yield BalanceStrip(id="balance-strip")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one(FilterSummary).show(None, None)
        self.query_one(BalanceStrip).show(None)
        self.query_one(TransactionsTable).focus()
        self.set_interval(PROBE_SECONDS, self._probe_tick)
        self.set_interval(POLL_SECONDS, self._poll_tick)

    # -- loading ---------------------------------------------------------------------------------

    def reload(self, *, quiet: bool = False) -> None:
        self._load(self.query_state)
        self._load_balance()

    def _set_query(self, query: Query) -> None:
        self.query_state = query
        self.newer = 0
        self.query_one(FilterSummary).show(query.status, query.method)
        self._load(query)

    def _load(self, query: Query) -> None:
        self._generation += 1  # on the UI loop, so a stale answer is recognised
        self._fetch(query, self._generation)

    @work(thread=True, group="transactions", exit_on_error=False)
    def _fetch(self, query: Query, generation: int) -> None:
        backend = self.payorch.backend
        try:
            if query.search:
                page = backend.search_payments(
                    query.search, status=query.status, method=query.method
                )
            else:
                page = backend.payments(
                    offset=query.page * PAGE_SIZE, status=query.status, method=query.method
                )
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading transactions", exc))
            return
        self.deliver(self._show, generation, query, page)

    def _show(self, generation: int, query: Query, page: Page) -> None:
        if generation != self._generation or query != self.query_state:
            return  # a newer load is on its way
        self.page = page
        if query.page == 0:
            self.newer = 0
            self._head = (page.rows[0].get("id") if page.rows else None, page.total)
        self.query_one(TransactionsTable).show(page.rows, self.payorch.chargebacks)
        self._show_pager()
        self.refresh_bindings()

    def _show_pager(self) -> None:
        page = self.page
        if page is None:
            return
        self.query_one(Pager).show(
            self.query_state.page, page.pages, page.total, self.newer, self.query_state.search
        )

    @work(thread=True, group="balance-strip", exclusive=True, exit_on_error=False)
    def _load_balance(self) -> None:
        try:
            balance = self.payorch.backend.balance()
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading the balance", exc, quiet=True))
            return
        self.deliver(self.query_one(BalanceStrip).show, balance)

    # -- live ------------------------------------------------------------------------------------

    def apply_transaction(self, tx: dict[str, Any]) -> None:
        table = self.query_one(TransactionsTable)
        tx_id = str(tx.get("id") or "")
        table.update_row(tx, chargeback=tx_id in self.payorch.chargebacks)
        self.refresh_bindings()
        query = self.query_state
        if query.status:
            # The row may have left (or joined) the filtered set: the page says which.
            self.mark_stale(STALE_AFTER["filtered_row_changed"])

    def _probe_tick(self) -> None:
        if self._probing or not self.is_current or not self.payorch.online:
            return
        if self.query_state.search:
            return  # a search's rows are fixed; events update them in place
        self._probing = True
        self._probe(self.query_state)

    @work(thread=True, group="probe", exit_on_error=False)
    def _probe(self, query: Query) -> None:
        try:
            head = self.payorch.backend.payments(limit=1, status=query.status, method=query.method)
        except ApiError:
            head = None  # the header shows a lost server; nothing to say per probe
        self.deliver(self._probed, query, head)

    def _probed(self, query: Query, head: Page | None) -> None:
        self._probing = False
        if head is None or query != self.query_state or self._head is None:
            return
        top = head.rows[0].get("id") if head.rows else None
        if (top, head.total) == self._head:
            return
        if query.page == 0:
            self._load(query)
        else:
            self.newer = max(0, head.total - self._head[1])
            self._show_pager()

    def _poll_tick(self) -> None:
        if self.payorch.connection == "polling" and self.is_current:
            self.reload(quiet=True)

    # -- actions ---------------------------------------------------------------------------------

    def selected_transaction(self) -> str | None:
        return self.query_one(TransactionsTable).selected_id()

    def applicable_actions(self) -> tuple[str, ...]:
        """The simulate actions the selected payment's status allows (the footer and the
        palette offer only these)."""
        table = self.query_one(TransactionsTable)
        tx_id = table.selected_id()
        identity = self.payorch.identity
        return simulate_actions(
            table.selected(),
            chargeback=tx_id in self.payorch.chargebacks,
            sandbox=identity is None or identity.sandbox,
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "simulate":
            return parameters[0] in self.applicable_actions()
        return True

    @on(DataTable.RowHighlighted, "#transactions")
    def _row_highlighted(self) -> None:
        self.refresh_bindings()

    def action_simulate(self, action: str) -> None:
        tx_id = self.selected_transaction()
        if tx_id is None:
            self.notify("No transaction selected.", severity="warning")
            return
        self.payorch.request_simulate(tx_id, action)

    def action_open(self) -> None:
        tx_id = self.selected_transaction()
        if tx_id is not None:
            self.payorch.open_transaction(tx_id)

    @on(DataTable.RowSelected, "#transactions")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.payorch.open_transaction(str(event.row_key.value))

    def action_search(self) -> None:
        self.query_one("#search", Input).focus()

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        text = event.value.strip() or None
        self._set_query(replace(self.query_state, search=text, page=0))
        self.query_one(TransactionsTable).focus()

    def search(self, text: str | None) -> None:
        """Search as if typed (the command palette uses it)."""
        self.query_one("#search", Input).value = text or ""
        self._set_query(replace(self.query_state, search=text, page=0))

    def action_cycle_status(self, step: int) -> None:
        status = _cycle(STATUSES, self.query_state.status, step)
        self._set_query(replace(self.query_state, status=status, page=0))

    def set_status(self, status: str | None) -> None:
        self._set_query(replace(self.query_state, status=status, page=0))

    def action_cycle_method(self, step: int) -> None:
        method = _cycle(METHODS, self.query_state.method, step)
        self._set_query(replace(self.query_state, method=method, page=0))

    def action_page(self, step: int) -> None:
        pages = self.page.pages if self.page else 1
        target = min(max(0, self.query_state.page + step), pages - 1)
        if target != self.query_state.page:
            self._set_query(replace(self.query_state, page=target))

    def action_clear(self) -> None:
        if self.focused is self.query_one("#search", Input):
            self.query_one(TransactionsTable).focus()
        self.query_one("#search", Input).value = ""
        if self.query_state != Query():
            self._set_query(Query())
