"""Requests: the server's request log (GET /_sim/requests), newest first, filtered on the server
by status class, method and path prefix; enter opens one request's bodies. The requests of
payorch's own tools (this TUI's polling among them) are left out; `t` shows them too.

Live by polling: the log has no event on the TUI's stream, and reads of the log are never logged
themselves, so asking for the newest page every second while the screen shows costs the log
nothing. A new page replaces the rows, keeping the cursor on its request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Input, Static

from payorch_cli.client import ApiError
from payorch_cli.tui.backend import HTTP_METHODS, PAGE_SIZE, REQUEST_STATUSES, Page
from payorch_cli.tui.messages import Failed
from payorch_cli.tui.screens.base import LiveScreen, needs_sandbox_text, sandbox_only
from payorch_cli.tui.widgets.requests import RequestBodies, RequestFilterBar, RequestsTable

POLL_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class RequestQuery:
    status: str | None = None  # 2xx, 4xx, 5xx
    method: str | None = None
    path: str | None = None  # a prefix: /payments, /_sim...
    include_tools: bool = False  # also payorch's own tools' requests (X-Payorch-Tool)


def _cycle(options: tuple[str, ...], current: str | None, step: int) -> str | None:
    values: list[str | None] = [None, *options]
    return values[(values.index(current) + step) % len(values)]


class RequestsScreen(LiveScreen):
    # The filter bar shows these keys (`/ search…`, `s status:all  m method:all`): a narrow
    # footer leaves them out for the others.
    HINTED_ELSEWHERE: ClassVar[frozenset[str]] = frozenset(
        {"filter_path", "cycle_status(1)", "cycle_method(1)"}
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("s", "cycle_status(1)", "Status"),
        Binding("S", "cycle_status(-1)", "Status", show=False),
        Binding("m", "cycle_method(1)", "Method"),
        Binding("M", "cycle_method(-1)", "Method", show=False),
        Binding("slash", "filter_path", "Path"),
        Binding("escape", "clear", "Clear", show=False),
        # Not in the footer, which has no room left at 80 columns; the README's keys table.
        Binding("t", "toggle_tools", "Tools", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.query_state = RequestQuery()
        self.page: Page | None = None
        self._generation = 0
        self._polling = False

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        with Horizontal(id="filters"):
            yield Input(placeholder="/ path prefix: /payments, /_sim…", id="path", compact=True)
            yield RequestFilterBar(id="request-filters")
        yield Static(id="requests-notice")
        yield RequestsTable(id="requests")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one(RequestFilterBar).show(None, None, None)
        self.query_one(RequestsTable).focus()
        self.set_interval(POLL_SECONDS, self._poll_tick)

    # -- loading ---------------------------------------------------------------------------------

    def reload(self, *, quiet: bool = False) -> None:
        self._generation += 1
        self._fetch(self.query_state, self._generation)

    def _set_query(self, query: RequestQuery) -> None:
        self.query_state = query
        self.query_one(RequestFilterBar).show(
            query.status, query.method, None, tools=query.include_tools
        )
        self.reload()

    def _poll_tick(self) -> None:
        if self.is_current and self.payorch.online and not self._polling:
            self._polling = True
            self.reload(quiet=True)

    @work(thread=True, group="requests", exit_on_error=False)
    def _fetch(self, query: RequestQuery, generation: int) -> None:
        try:
            page = self.payorch.backend.requests(
                limit=PAGE_SIZE,
                status=query.status,
                method=query.method,
                path=query.path,
                include_tools=query.include_tools,
            )
        except ApiError as exc:
            self.deliver(self._done_polling)
            if sandbox_only(exc):
                self.deliver(self._needs_sandbox)
                return
            self.payorch.post_message(Failed("Loading the request log", exc, quiet=True))
            return
        self.deliver(self._show, generation, query, page)

    def _needs_sandbox(self) -> None:
        # Under a production key the previous key's log must not stay on screen either, nor its
        # count in the filter bar.
        self.page = None
        self.query_one(RequestsTable).show([])
        query = self.query_state
        self.query_one(RequestFilterBar).show(
            query.status, query.method, None, tools=query.include_tools
        )
        notice = self.query_one("#requests-notice", Static)
        notice.update(needs_sandbox_text("The request log"))
        notice.display = True

    def _done_polling(self) -> None:
        self._polling = False

    def _show(self, generation: int, query: RequestQuery, page: Page) -> None:
        self._polling = False
        if generation != self._generation or query != self.query_state:
            return  # a newer load is on its way
        self.page = page
        self.query_one("#requests-notice", Static).display = False
        self.query_one(RequestsTable).show(page.rows)
        self.query_one(RequestFilterBar).show(
            query.status, query.method, page.total, tools=query.include_tools
        )

    # -- actions ---------------------------------------------------------------------------------

    def action_cycle_status(self, step: int) -> None:
        status = _cycle(REQUEST_STATUSES, self.query_state.status, step)
        self._set_query(replace(self.query_state, status=status))

    def action_cycle_method(self, step: int) -> None:
        method = _cycle(HTTP_METHODS, self.query_state.method, step)
        self._set_query(replace(self.query_state, method=method))

    def action_toggle_tools(self) -> None:
        include = not self.query_state.include_tools
        self._set_query(replace(self.query_state, include_tools=include))

    def action_filter_path(self) -> None:
        self.query_one("#path", Input).focus()

    @on(Input.Submitted, "#path")
    def _path(self, event: Input.Submitted) -> None:
        text = event.value.strip() or None
        if text is not None and not text.startswith("/"):
            text = "/" + text
        self._set_query(replace(self.query_state, path=text))
        self.query_one(RequestsTable).focus()

    def action_clear(self) -> None:
        if self.focused is self.query_one("#path", Input):
            self.query_one(RequestsTable).focus()
        self.query_one("#path", Input).value = ""
        if self.query_state != RequestQuery():
            self._set_query(RequestQuery())

    def selected_request(self) -> str | None:
        return self.query_one(RequestsTable).selected_id()

    def action_open(self) -> None:
        request_id = self.selected_request()
        if request_id is not None:
            self.app.push_screen(RequestScreen(request_id))

    @on(DataTable.RowSelected, "#requests")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()


class RequestScreen(LiveScreen):
    """One logged request: the request's kept headers and body, the response's body."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "app.pop_screen", "Back"),
    ]

    def __init__(self, request_id: str) -> None:
        super().__init__()
        self.request_id = request_id
        self.detail: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static(Text(self.request_id, style="bold"), id="request-title")
        with VerticalScroll(id="bodies-scroll"):
            yield RequestBodies(id="bodies")
        yield from self.compose_footer()

    def reload(self, *, quiet: bool = False) -> None:
        self._fetch()

    @work(thread=True, group="request", exclusive=True, exit_on_error=False)
    def _fetch(self) -> None:
        try:
            detail = self.payorch.backend.request_detail(self.request_id)
        except ApiError as exc:
            if sandbox_only(exc):
                self.deliver(self._needs_sandbox)
                return
            self.payorch.post_message(Failed("Loading the request", exc))
            return
        self.deliver(self._show, detail)

    def _needs_sandbox(self) -> None:
        self.detail = None
        self.query_one(RequestBodies).update(needs_sandbox_text("The request log"))

    def _show(self, detail: dict[str, Any]) -> None:
        self.detail = detail
        self.query_one(RequestBodies).show(detail)
