"""The drift screen's regions: the differences table (the columns of `payorch drift`'s text
report, with the side to fix) and the detail pane of the selected difference."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from payorch_cli.render.drift import FIX_WORDS
from payorch_cli.tui import present
from payorch_cli.tui.widgets.keyed_table import KeyedTable

# The exchange, where and what first: they fit in 80 columns; the values and the side to fix
# follow on wider terminals (and always in the detail pane).
COLUMNS = (
    ("seq", "#"),
    ("where", "Exchange"),
    ("field", "Field"),
    ("upstream", "Upstream"),
    ("payorch", "payorch"),
    ("fix", "Fix"),
)
GIVE_WAY = ("fix", "payorch", "upstream")


def difference_id(index: int) -> str:
    """A row's key: one exchange has several differences, so its number is not unique."""
    return f"d{index}"


class DriftTable(KeyedTable):
    COLUMNS = COLUMNS
    GIVE_WAY = GIVE_WAY

    def cells(self, record: dict[str, Any]) -> list[Any]:
        fix = present.text(record.get("fix"))
        return [
            present.text(record.get("seq")),
            present.text(record.get("where")),
            present.text(record.get("field")),
            present.text(record.get("upstream")),
            present.text(record.get("payorch")),
            Text(fix, style="yellow" if fix == "payorch" else "dim"),
        ]


class DriftDetail(Static):
    """Everything about the selected difference, the attach command on a line of its own."""

    def show(self, difference: dict[str, Any] | None) -> None:
        if difference is None:
            self.update(Text("No difference: payorch answered as the upstream did.", style="dim"))
            return
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        grid.add_row("exchange", f"#{present.text(difference.get('seq'))}")
        grid.add_row("where", present.text(difference.get("where")))
        grid.add_row("field", present.text(difference.get("field")))
        grid.add_row("upstream", present.text(difference.get("upstream")))
        grid.add_row("payorch", present.text(difference.get("payorch")))
        fix = present.text(difference.get("fix"))
        grid.add_row("fix", Text(f"{fix}: {FIX_WORDS.get(fix, '')}", style="bold"))
        parts: list[Any] = [grid]
        attach = difference.get("attach")
        if isinstance(attach, str) and attach:
            parts += [Text("Attach it to an issue with:", style="dim"), Text(attach)]
        self.update(Group(*parts))
