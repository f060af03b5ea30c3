"""The balances screen's regions: pay-in balance, fee summary, payout balances, movements."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import DataTable, Static

from payorch_cli.tui import present


def _section(rows: list[tuple[str, str]], title: str) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_row(Text(title, style="bold"), "")
    for label, value in rows:
        grid.add_row(label, value)
    return grid


class PayinPanel(Static):
    def show(self, balance: dict[str, Any] | None) -> None:
        if balance is None:
            self.update(Text("Pay-in balance …", style="dim"))
            return
        amounts = present.obj(balance.get("balance"))
        rows = [(key, present.money(amounts.get(key))) for key in ("available", "pending")]
        rows += [(key, present.money(amounts.get(key))) for key in ("frozen", "reserve")]
        rows.append(("tier", f"{present.text(balance.get('tier'))}"))
        rows.append(("reserve %", present.text(balance.get("rollingReservePct"))))
        currency = present.text(balance.get("currency") or "USD")
        grid = _section(rows, f"Pay-in ({currency})")
        warnings = balance.get("ledgerWarnings")
        if isinstance(warnings, list) and warnings:
            grid.add_row(Text(f"⚠ {len(warnings)} ledger warning(s)", style="bold red"), "")
        self.update(grid)


class FeesPanel(Static):
    LABELS = (
        ("grossVolume", "gross volume"),
        ("platformFees", "platform fees"),
        ("flatFees", "flat fees"),
        ("chargebackFees", "chargeback fees"),
        ("totalFees", "total fees"),
        ("netBalance", "net balance"),
    )

    def show(self, balance: dict[str, Any] | None) -> None:
        summary = present.obj((balance or {}).get("feeSummary"))
        rows = [(label, present.money(summary.get(key))) for key, label in self.LABELS]
        self.update(_section(rows, "Fee summary"))


class PayoutPanel(Static):
    def show(self, payout: dict[str, Any] | None, *, loaded: bool = True) -> None:
        if not loaded:
            self.update(Text("Payout balances …", style="dim"))
            return
        if payout is None:
            self.update(
                Text.assemble(
                    ("Payout balances\n", "bold"), ("not offered by this server", "dim italic")
                )
            )
            return
        # The title above the grid, not in its first column: that column is only as wide as a
        # currency code, which leaves the figures room on a narrow terminal.
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        for _ in range(3):
            table.add_column(justify="right", no_wrap=True)
        table.add_row("", *(Text(h, style="dim") for h in ("avail", "pend", "resv")))
        entries = present.items(payout.get("balances"))
        for entry in entries:
            entry = present.obj(entry)
            table.add_row(
                present.text(entry.get("currency")),
                *(present.money(entry.get(k)) for k in ("available", "pending", "reserved")),
            )
        if not entries:
            table.add_row(Text("no balances yet", style="dim"), "", "", "")
        self.update(Group(Text("Payout", style="bold"), table))


class MovementsTable(DataTable[Any]):
    COLUMNS = (
        ("created", "Created"),
        ("type", "Movement"),
        ("bucket", "Bucket"),
        ("amount", "Amount"),
        ("tx", "Transaction"),
        ("effective", "Effective"),
    )

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for key, label in self.COLUMNS:
            # The amount's header sits over its right-aligned figures, as in the list's.
            self.add_column(Text(label, justify="right") if key == "amount" else label, key=key)

    def show(self, balance: dict[str, Any] | None) -> None:
        self.clear()
        movements = (balance or {}).get("movements")
        for movement in present.items(movements):
            movement = present.obj(movement)
            amount = present.decimal(movement.get("amount"))
            style = "" if amount is None else ("green" if amount >= 0 else "red")
            self.add_row(
                present.when(movement.get("createdAt")),
                present.text(movement.get("type")),
                present.text(movement.get("bucket")),
                Text(present.money(movement.get("amount")), style=style, justify="right"),
                present.text(movement.get("transactionId") or movement.get("claimId")),
                present.when(movement.get("effectiveAt"), seconds=False),
            )
