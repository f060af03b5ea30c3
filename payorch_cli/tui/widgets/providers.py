"""The providers region: one row per simulated provider, what it does now and what it has done.

The words are the CLI's (`payorch_cli.render.providers`), so `payorch providers` and this table
say the same thing about a provider."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from payorch_cli.render import providers as words
from payorch_cli.tui import present

# What a provider does now, its incidents and counts first: they fit in 80 columns; the
# settings in full, the callback and the rails show on wider terminals.
COLUMNS = (
    ("id", "Provider"),
    ("now", "Now"),
    ("incidents", "Incidents"),
    ("counts", "Counts"),
    ("kind", "Kind"),
    ("behaviour", "Settings"),
    ("callback", "Callback"),
    ("rails", "Rails"),
)


def provider_cells(provider: dict[str, Any]) -> list[Any]:
    disturbed = words.is_disturbed(provider)
    return [
        present.text(provider.get("id")),
        Text(words.now_text(provider), style="bold yellow" if disturbed else "green"),
        Text(words.incidents_text(provider), style="yellow" if provider.get("incidents") else ""),
        words.counts_text(provider),
        present.text(provider.get("kind")),
        words.behaviour_text(provider),
        words.callback_text(provider),
        words.rails_text(provider),
    ]


class ProvidersTable(DataTable[Any]):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    def show(self, providers: list[dict[str, Any]]) -> None:
        keep = self.selected_id()
        self.clear()
        seen: set[str] = set()
        for provider in providers:
            provider_id = present.text(provider.get("id"))
            if provider_id in seen:
                continue
            seen.add(provider_id)
            self.add_row(*provider_cells(provider), key=provider_id)
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
