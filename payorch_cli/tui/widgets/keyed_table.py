"""A table of records keyed by their `id`, whose selection survives a reload: the deliveries,
requests and providers lists."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.widgets import DataTable

from payorch_cli.tui import present


class KeyedTable(DataTable[Any]):
    """Row keys are the records' ids; a subclass gives its columns and a record's cells."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = ()

    def cells(self, record: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for key, label in self.COLUMNS:
            self.add_column(label, key=key)

    def show(self, records: list[dict[str, Any]]) -> None:
        keep = self.selected_id()
        self.clear()
        seen: set[str] = set()
        for record in records:
            record_id = present.text(record.get("id"))
            if record_id in seen:
                continue
            seen.add(record_id)
            self.add_row(*self.cells(record), key=record_id)
        if keep in seen:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def selected_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:
            return None
        return None if key.value is None else str(key.value)
