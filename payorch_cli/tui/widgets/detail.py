"""The transaction detail's regions: every field, FX and fees, and the timeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import DataTable, Static

from payorch_cli.tui import present

# Shown in their own panel; everything else is listed field by field.
BREAKDOWN_KEYS = ("fees", "settlement")


def _grid() -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    return grid


class FieldsPanel(Static):
    """Every field in the server's order; objects (`paymentData`, `timestamps`) as sections."""

    def show(self, tx: dict[str, Any], *, chargeback: bool) -> None:
        grid = _grid()
        grid.add_row("status", present.status_text(tx.get("status"), chargeback=chargeback))
        nested: list[tuple[str, dict[str, Any]]] = []
        for key, value in tx.items():
            if key in (*BREAKDOWN_KEYS, "status"):
                continue
            if isinstance(value, dict) and value:
                nested.append((key, value))
            else:
                grid.add_row(key, present.text(value))
        for key, value in nested:
            grid.add_row(Text(key, style="bold"), "")
            for path, shown in present.flatten(value):
                grid.add_row(f"  {path}", shown)
        self.update(grid)


class BreakdownPanel(Static):
    def show(self, tx: dict[str, Any]) -> None:
        grid = _grid()
        grid.add_row(Text("FX", style="bold"), "")
        for label, value in present.fx_rows(tx):
            grid.add_row(label, value)
        grid.add_row("", "")
        grid.add_row(Text("Fees", style="bold"), "")
        for label, value in present.fee_rows(tx):
            grid.add_row(label, value)
        self.update(grid)


@dataclass(frozen=True, slots=True)
class Entry:
    at: str  # ISO time (simulated), sorts as text: the server always writes UTC `Z` times
    kind: str
    what: str
    detail: Text | str


def involves(event: dict[str, Any] | None, tx_id: str) -> bool:
    data = (event or {}).get("data")
    if not isinstance(data, dict):
        return False
    return tx_id in (data.get("id"), data.get("transactionId"))


def timeline(
    tx: dict[str, Any], events: list[dict[str, Any]], deliveries: list[dict[str, Any]]
) -> list[Entry]:
    """State changes, events and delivery attempts of one transaction, oldest first.

    The API lists no events per transaction: they come from the deliveries (every event a
    subscription received) and from the stream since the TUI started, merged by event id.
    """
    entries: list[Entry] = []
    timestamps = present.obj(tx.get("timestamps"))
    for name, at in timestamps.items():
        if name != "updated":
            entries.append(Entry(str(at), "state", name, ""))
    seen: set[str] = set()
    for event in [*events, *(d.get("event") for d in deliveries)]:
        if not isinstance(event, dict) or str(event.get("id")) in seen:
            continue
        seen.add(str(event.get("id")))
        data = present.obj(event.get("data"))
        entries.append(
            Entry(
                str(event.get("createdAt") or ""),
                "event",
                present.text(event.get("type")),
                Text.assemble(
                    present.text(event.get("id")), "  ", present.status_text(data.get("status"))
                ),
            )
        )
    for delivery in deliveries:
        attempts = present.items(delivery.get("attempts"))
        for attempt in attempts:
            if not isinstance(attempt, dict):
                continue
            entries.append(
                Entry(
                    str(attempt.get("at") or ""),
                    "delivery",
                    f"{present.text(delivery.get('eventType'))} "
                    f"#{present.text(attempt.get('number'))}",
                    Text.assemble(
                        present.text(delivery.get("id")),
                        "  ",
                        present.http_status_text(attempt),
                        f"  {present.latency(attempt)}  {present.text(attempt.get('trigger'))}",
                    ),
                )
            )
    order = {"state": 0, "event": 1, "delivery": 2}  # a cause before its effects
    entries.sort(key=lambda e: (e.at, order.get(e.kind, 3)))
    return entries


class TimelineTable(DataTable[Any]):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        for key, label in (("at", "Time"), ("kind", "Kind"), ("what", "What"), ("detail", "")):
            self.add_column(label, key=key)

    def show(self, entries: list[Entry]) -> None:
        self.clear()
        for entry in entries:
            self.add_row(present.when(entry.at), entry.kind, entry.what, entry.detail)


class TraceTable(DataTable[Any]):
    """The payment's cascade trace (GET /_sim/payments/{id}/trace), one row per entry."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for key, label in (("at", "Time"), ("kind", "Kind"), ("detail", "")):
            self.add_column(label, key=key)

    def show(self, doc: dict[str, Any]) -> None:
        from payorch_cli.render.trace import KIND_STYLES, entry_details

        self.clear()
        for entry in present.items(doc.get("entries")):
            if not isinstance(entry, dict):
                continue
            kind = present.text(entry.get("kind"))
            self.add_row(
                present.when(entry.get("at")),
                Text(kind, style=KIND_STYLES.get(kind, "")),
                entry_details(entry),
            )
