"""The Requests screen's regions: the filter bar, the request log's table, and one request's
bodies (as GET /_sim/requests/{id} shows them, already masked by the server)."""

from __future__ import annotations

import json
from typing import Any

from rich.cells import cell_len
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from payorch_cli.tui import present
from payorch_cli.tui.widgets.keyed_table import KeyedTable

# (key, label). The path takes what the width leaves after the time, method, status and duration
# (so the status always shows), and after the error code and merchant where they fit beside the
# path: its query is cut in the middle first, so the path itself, ids and all, stays whole.
COLUMNS = (
    ("at", "Time"),
    ("method", "Method"),
    ("path", "Path"),
    ("status", "Status"),
    ("ms", "ms"),
    ("error", "Error"),
    ("who", "Merchant / env"),
    ("id", "Request id"),
)
# The columns beside the path that must show whole; those after it shown whole where they fit,
# in this order (the request id spills off the right edge first); the path's least width.
BESIDE_PATH = ("at", "method", "status", "ms")
AFTER_PATH = ("error", "who")
PATH_MIN = 16
API_PREFIX = "/api/v1"
WIDE = 100  # from this many columns the time shows its date


def status_text(status: Any) -> Text:
    code = status if isinstance(status, int) and not isinstance(status, bool) else None
    style = (
        "bold red"
        if code and code >= 500
        else "bold yellow"
        if code and code >= 400
        else "bold green"
        if code
        else "dim"
    )
    return Text(present.text(status), style=style)


def path_text(summary: dict[str, Any]) -> str:
    path = present.text(summary.get("path"))
    query = summary.get("query")
    return f"{path}?{query}" if isinstance(query, str) and query else path


def fit_path(summary: dict[str, Any], width: int) -> str:
    """The path and query in `width` cells: whole if they fit; else the path whole (or, if not
    even that, without its `/api/v1` prefix, shown as `…`) and the query cut in the middle; a
    path too long for either is cut in the middle too."""
    whole = path_text(summary)
    if cell_len(whole) <= width:
        return whole
    path = present.text(summary.get("path"))
    query = summary.get("query") if isinstance(summary.get("query"), str) else ""
    shorter = "…" + path[len(API_PREFIX) :] if path.startswith(API_PREFIX + "/") else None
    for shown in (path, shorter):
        if shown is None or cell_len(shown) > width:
            continue
        rest = width - cell_len(shown) - 1  # after the `?`
        if not query or rest < 1:
            return shown
        return shown + "?" + (present.squeeze(query, rest) if rest >= 5 else "…")
    return present.squeeze(whole, width)


def who(summary: dict[str, Any]) -> str:
    merchant = summary.get("merchantId")
    if not merchant:
        return "(no credential)"
    return f"{merchant}/{present.text(summary.get('environment'))}"


def request_cells(
    summary: dict[str, Any], path_width: int | None = None, *, dated: bool = True
) -> list[Any]:
    duration = present.decimal(summary.get("durationMs"))
    error = present.text(summary.get("errorCode")) if summary.get("errorCode") else ""
    replay = " ↺" if summary.get("idempotentReplayed") else ""
    at = present.when(summary.get("at"))
    return [
        at if dated else at.split(" ")[-1],
        present.text(summary.get("method")),
        path_text(summary) if path_width is None else fit_path(summary, path_width),
        status_text(summary.get("status")),
        Text("" if duration is None else f"{duration:.1f}", justify="right"),
        error + replay,
        who(summary),
        present.text(summary.get("id")),
    ]


class RequestsTable(KeyedTable):
    COLUMNS = COLUMNS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.path_width: int | None = None
        self.dated = True

    def cells(self, record: dict[str, Any]) -> list[Any]:
        return request_cells(record, self.path_width, dated=self.dated)

    def _layout(self, records: list[dict[str, Any]]) -> tuple[int | None, bool]:
        """The path's width (None: whole, every column fits) and whether the time shows its
        date (not at 80 columns, where the path needs the room)."""
        room = self.size.width - self.styles.scrollbar_size_vertical - 2 * self.cell_padding
        if room <= 0:
            return None, True
        dated = self.size.width >= WIDE
        rows = [request_cells(record, dated=dated) for record in records]
        widths = {
            key: max([present.cell_width(label), *(present.cell_width(r[i]) for r in rows)])
            + 2 * self.cell_padding
            for i, (key, label) in enumerate(COLUMNS)
        }
        if sum(widths.values()) - 2 * self.cell_padding <= room:
            return None, dated
        beside = sum(widths[key] for key in BESIDE_PATH)
        paths = [cell_len(present.text(r.get("path"))) for r in records]
        need = min(max([PATH_MIN, *paths]), room - beside)
        after = 0
        for key in AFTER_PATH:
            if beside + need + after + widths[key] > room:
                break
            after += widths[key]
        whole = widths["path"] - 2 * self.cell_padding
        return max(PATH_MIN, min(whole, room - beside - after)), dated

    def show(self, records: list[dict[str, Any]]) -> None:
        self.path_width, self.dated = self._layout(list(records))
        super().show(records)

    def on_resize(self) -> None:
        if self.records and self._layout(self.records) != (self.path_width, self.dated):
            self.show(self.records)


class RequestFilterBar(Static):
    DEFAULT_CSS = """
    RequestFilterBar { width: auto; height: 1; padding: 0 1; }
    """

    def show(
        self, status: str | None, method: str | None, total: int | None, *, tools: bool = False
    ) -> None:
        line = present.filters_line(status, method)
        if tools:
            line.append("  ·  with payorch's own requests", style="yellow")
        if total is not None:
            line.append(f"  ·  {total:,} logged", style="dim")
        self.update(line)


def body_renderable(view: Any) -> Any:
    """A logged body: its JSON pretty-printed, its text as is, or why there is none."""
    body = present.obj(view)
    size = body.get("bytes")
    note = f"{present.text(size)} bytes" + (", cut at 64 KiB" if body.get("truncated") else "")
    if "body" in body:
        text = json.dumps(body["body"], indent=2, ensure_ascii=False)
        shown: Any = Syntax(
            text, "json", theme="ansi_dark", word_wrap=True, background_color="default"
        )
    elif isinstance(body.get("text"), str):
        shown = Text(body["text"])
    else:
        shown = Text("(no body)", style="dim")
    grid = Table.grid()
    grid.add_column()
    grid.add_row(Text(note, style="dim"))
    grid.add_row(shown)
    return grid


class RequestBodies(Static):
    """The request (kept headers, body), then the response's body."""

    def show(self, detail: dict[str, Any]) -> None:
        request = present.obj(detail.get("request"))
        response = present.obj(detail.get("response"))
        head = Table.grid(padding=(0, 1))
        head.add_column(style="bold cyan", no_wrap=True)
        head.add_column(overflow="fold")
        head.add_row(present.text(detail.get("method")), path_text(detail))
        for name, value in present.obj(request.get("headers")).items():
            head.add_row(str(name), present.text(value))
        head.add_row(
            "at",
            f"{present.text(detail.get('at'))}  (simulated "
            f"{present.text(detail.get('simulatedAt'))})",
        )
        head.add_row("by", who(detail))
        caused = detail.get("eventIds")
        if caused:
            head.add_row("events", ", ".join(present.text(event) for event in caused))
        grid = Table.grid()
        grid.add_column()
        grid.add_row(head)
        grid.add_row(Text("Request body", style="bold"))
        grid.add_row(body_renderable(request.get("body")))
        grid.add_row("")
        status = Text.assemble(("Response ", "bold"), status_text(detail.get("status")))
        if detail.get("errorCode"):
            status.append(f" {detail['errorCode']}", style="bold")
        if detail.get("idempotentReplayed"):
            status.append("  (Idempotent-Replayed)", style="dim")
        grid.add_row(status)
        grid.add_row(body_renderable(response.get("body")))
        self.update(grid)
