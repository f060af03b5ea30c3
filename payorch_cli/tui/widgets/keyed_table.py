"""A table of records keyed by their `id`, whose selection survives a reload: the deliveries,
requests and providers lists. Where not every column fits, those a subclass lists in `GIVE_WAY`
leave, first to last, so the others (ids among them) show whole; they come back when it widens."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.widgets import DataTable

from payorch_cli.tui import present


class KeyedTable(DataTable[Any]):
    """Row keys are the records' ids; a subclass gives its columns and a record's cells."""

    COLUMNS: ClassVar[tuple[tuple[str, str], ...]] = ()
    GIVE_WAY: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.records: list[dict[str, Any]] = []
        self.shown_columns: list[str] = []

    def cells(self, record: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self._set_columns([key for key, _ in self.COLUMNS])

    def _set_columns(self, keys: list[str]) -> None:
        self.clear(columns=True)
        self.shown_columns = keys
        for key, label in self.COLUMNS:
            if key in keys:
                self.add_column(label, key=key)

    def _fitting(self, rows: list[list[Any]]) -> list[str]:
        if not self.GIVE_WAY:
            return [key for key, _ in self.COLUMNS]
        widths = {
            key: max([present.cell_width(label), *(present.cell_width(r[i]) for r in rows)])
            for i, (key, label) in enumerate(self.COLUMNS)
        }
        room = self.size.width - self.styles.scrollbar_size_vertical
        return present.fitting_columns(widths, room, self.GIVE_WAY, padding=2 * self.cell_padding)

    def show(self, records: list[dict[str, Any]]) -> None:
        keep = self.selected_id()
        self.records = list(records)
        rows: dict[str, list[Any]] = {}
        for record in records:
            record_id = present.text(record.get("id"))
            if record_id not in rows:
                rows[record_id] = self.cells(record)
        fitting = self._fitting(list(rows.values()))
        if fitting != self.shown_columns:
            self._set_columns(fitting)
        else:
            self.clear()
        columns = [key for key, _ in self.COLUMNS]
        for record_id, cells in rows.items():
            shown = [c for key, c in zip(columns, cells, strict=True) if key in fitting]
            self.add_row(*shown, key=record_id)
        if keep in rows:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def on_resize(self) -> None:
        # What fits depends on the width: shown again when that changes.
        if self.records and self._fitting([self.cells(r) for r in self.records]) != (
            self.shown_columns
        ):
            self.show(self.records)

    def selected_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:
            return None
        return None if key.value is None else str(key.value)
