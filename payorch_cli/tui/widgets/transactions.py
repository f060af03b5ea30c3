"""The transactions screen's regions: filter bar, the table, the pager and the balance strip."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static

from payorch_cli.tui import present

# (key, label, amounts are right-aligned). Where they do not all fit (80 columns), the columns
# of GIVE_WAY leave, first to last, so the ids (transaction and order id), the status and the
# amount stay whole: the order id spilled off the right edge, cut to one character.
COLUMNS = (
    ("created", "Created", False),
    ("id", "Transaction", False),
    ("status", "Status", False),
    ("amount", "USD", True),
    ("local", "Local", True),
    ("method", "Method", False),
    ("order", "Order id", False),
)
GIVE_WAY = ("local", "created", "method")


def row_cells(tx: dict[str, Any], *, chargeback: bool) -> list[Any]:
    timestamps = present.obj(tx.get("timestamps"))
    return [
        present.when(timestamps.get("created"), seconds=False),
        present.transaction_id(tx),
        present.status_text(tx.get("status"), chargeback=chargeback),
        Text(present.money(tx.get("amount")), justify="right"),
        Text(
            present.money(tx.get("amountLocal"), present.text(tx.get("currencyLocal"))),
            justify="right",
        ),
        present.text(tx.get("paymentMethod")),
        present.text(tx.get("merchantOrderId")),
    ]


class TransactionsTable(DataTable[Any]):
    """Row keys are transaction ids, so an event updates its row in place. The transactions
    shown are kept too: which actions the footer offers depends on the selected one, and the
    columns that fit are chosen again when the width changes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transactions: dict[str, dict[str, Any]] = {}
        self.chargebacks: set[str] = set()
        self.shown_columns: list[str] = []

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self._set_columns([key for key, _, _ in COLUMNS])

    def _set_columns(self, keys: list[str]) -> None:
        self.clear(columns=True)
        self.shown_columns = keys
        for key, label, right in COLUMNS:
            if key in keys:
                self.add_column(Text(label, justify="right") if right else label, key=key)

    def _fitting(self, rows: list[list[Any]]) -> list[str]:
        widths = {
            key: max([present.cell_width(label), *(present.cell_width(r[i]) for r in rows)])
            for i, (key, label, _) in enumerate(COLUMNS)
        }
        room = self.size.width - self.styles.scrollbar_size_vertical
        return present.fitting_columns(widths, room, GIVE_WAY, padding=2 * self.cell_padding)

    def _visible(self, cells: list[Any]) -> list[Any]:
        return [
            c for (key, _, _), c in zip(COLUMNS, cells, strict=True) if key in self.shown_columns
        ]

    def show(self, rows: list[dict[str, Any]], chargebacks: set[str]) -> None:
        keep = self.selected_id()
        self.transactions = {}
        self.chargebacks = set(chargebacks)
        cells: dict[str, list[Any]] = {}
        for tx in rows:
            tx_id = present.transaction_id(tx)
            if tx_id in self.transactions:  # a duplicate id would make DataTable raise
                continue
            self.transactions[tx_id] = tx
            cells[tx_id] = row_cells(tx, chargeback=tx_id in chargebacks)
        fitting = self._fitting(list(cells.values()))
        if fitting != self.shown_columns:
            self._set_columns(fitting)
        else:
            self.clear()
        for tx_id, row in cells.items():
            self.add_row(*self._visible(row), key=tx_id)
        if keep in self.transactions:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def on_resize(self) -> None:
        # What fits depends on the width: shown again, from what is kept, when that changes.
        rows = [
            row_cells(tx, chargeback=tx_id in self.chargebacks)
            for tx_id, tx in self.transactions.items()
        ]
        if self._fitting(rows) != self.shown_columns:
            self.show(list(self.transactions.values()), self.chargebacks)

    def update_row(self, tx: dict[str, Any], *, chargeback: bool) -> bool:
        """Refresh the row of this transaction, if shown; True when it was."""
        tx_id = present.transaction_id(tx)
        if tx_id not in self.rows:
            return False
        self.transactions[tx_id] = {**self.transactions.get(tx_id, {}), **tx}
        if chargeback:
            self.chargebacks.add(tx_id)
        cells = row_cells(self.transactions[tx_id], chargeback=chargeback)
        for (key, _, _), value in zip(COLUMNS, cells, strict=True):
            if key in self.shown_columns:
                self.update_cell(tx_id, key, value)
        return True

    def selected(self) -> dict[str, Any] | None:
        """The selected row's transaction, as last shown."""
        tx_id = self.selected_id()
        return None if tx_id is None else self.transactions.get(tx_id)

    def selected_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # no valid cursor yet
            return None
        return None if key.value is None else str(key.value)

    def status_of(self, tx_id: str) -> str:
        """The status word shown on a row (tests and the latency measurement read it)."""
        return str(self.get_cell(tx_id, "status")).split(" ")[0]


class FilterSummary(Static):
    DEFAULT_CSS = """
    FilterSummary { width: auto; height: 1; padding: 0 1; }
    """

    def show(self, status: str | None, method: str | None) -> None:
        self.update(present.filters_line(status, method))


class Pager(Static):
    DEFAULT_CSS = """
    Pager { height: 1; width: 1fr; padding: 0 1; }
    """

    def show(self, page: int, pages: int, total: int, newer: int, search: str | None) -> None:
        line = Text.assemble(
            ("page ", "dim"),
            (f"{page + 1}/{pages}", "bold"),
            ("  ·  ", "dim"),
            f"{total:,} transaction{'s' if total != 1 else ''}",
        )
        if search:
            line.append("  ·  search ", style="dim")
            line.append(search, style="bold")
        if newer:
            line.append(f"  ·  ↑ {newer} new (page 1)", style="bold yellow")
        line.append("   [ ] pages", style="dim")
        self.update(line)


class BalanceStrip(Static):
    """The pay-in balance in one line, so a status change shows its money move right here."""

    DEFAULT_CSS = """
    BalanceStrip { height: 1; width: 1fr; padding: 0 1; background: $boost; }
    """

    def show(self, balance: dict[str, Any] | None) -> None:
        if balance is None:
            self.update(Text("balance: …", style="dim"))
            return
        amounts = present.obj(balance.get("balance"))
        line = Text(f"{present.text(balance.get('currency') or 'USD')} ", style="bold")
        for key in ("available", "pending", "frozen", "reserve"):
            line.append(f"{key} ", style="dim")
            line.append(present.money(amounts.get(key)), style="bold")
            line.append("  ")
        self.update(line)
