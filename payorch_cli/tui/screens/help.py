"""`?` and F1: the keys of the screen the user is on, read from its bindings (so the list is the
screen's own, never a copy that drifts from it); Escape (or the same key again) closes it."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.actions import parse
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, Static

from payorch_cli.tui import present

HELP_KEYS = "question_mark,f1"


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str, str]]:
    """(where, key, what) for every key the screen declares, then the app's, in their order; a
    key the screen's state disables (an action the selected payment's status does not allow)
    is left out, as the footer leaves it out. Textual's own keys (focus, copy, a table's
    arrows) are not listed; the command palette's is."""
    app = screen.app
    rows: list[tuple[str, str, str]] = []
    for where, node in (("this screen", screen), ("anywhere", app)):
        for binding in Binding.make_bindings(type(node).BINDINGS):
            _, name, params = parse(binding.action)
            if binding.system or not binding.description:
                continue
            if node.check_action(name, params) is False:
                continue
            rows.append((where, app.get_key_display(binding), binding.description))
    palette = Binding(app.COMMAND_PALETTE_BINDING, "command_palette")
    rows.append(("anywhere", app.get_key_display(palette), "Command palette: every action"))
    return rows


def screen_name(screen: Screen[Any]) -> str:
    """`TransactionsScreen` -> `transactions`, `KeySwitcher` -> `key switcher`."""
    name = re.sub(r"(Screen|Dialog)$", "", type(screen).__name__) or type(screen).__name__
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(f"escape,{HELP_KEYS}", "dismiss", "Close"),
    ]

    def __init__(self, title: str, keys: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.keys = present.merged_keys(keys)

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim", no_wrap=True)
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for where, keys, what in self.keys:
            table.add_row(where, keys, what)
        with Vertical(classes="dialog"):
            yield Label(f"Keys: {self.title_text}", classes="dialog-title")
            with VerticalScroll(id="help-keys"):
                yield Static(table)
            yield Label(
                Text("esc closes · ctrl+p lists every action, searchable", style="dim"),
                classes="dialog-detail",
            )

    def on_mount(self) -> None:
        self.query_one("#help-keys").focus()  # the arrows scroll a list taller than the screen
