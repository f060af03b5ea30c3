"""The providers region: one row per simulated provider, what it does now and what it has done.

The words are the CLI's (`payorch_cli.render.providers`), so `payorch providers` and this table
say the same thing about a provider."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from payorch_cli.render import providers as words
from payorch_cli.tui import present
from payorch_cli.tui.widgets.keyed_table import KeyedTable

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


class ProvidersTable(KeyedTable):
    COLUMNS = COLUMNS

    def cells(self, record: dict[str, Any]) -> list[Any]:
        return provider_cells(record)
