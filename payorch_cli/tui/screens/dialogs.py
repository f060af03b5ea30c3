"""Modal dialogs: confirm a destructive action, advance the clock, switch key."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList
from textual.widgets.option_list import Option

from payorch.vocabulary import NAMESPACE_NAME_RULE
from payorch_cli import durations
from payorch_cli.credentials import Credential
from payorch_cli.tui.credentials import switchable


class ConfirmDialog(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="dialog-title")
            if self.detail:
                yield Label(self.detail, classes="dialog-detail")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", variant="error", id="yes", compact=True)
                yield Button("No (n)", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # Enter alone never confirms

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


# Presets that matter in the simulator: a webhook retry, a settlement (T+1..T+3), a claim.
CLOCK_PRESETS = (
    ("1m", "1 minute: the first webhook retry"),
    ("5m", "5 minutes: the reconciliation poll"),
    ("1h", "1 hour: a refund claim resolves"),
    ("1d", "1 day"),
    ("2d", "2 days: T+2 settlement"),
    ("7d", "7 days: a chargeback resolves"),
)


def parse_duration(value: str) -> float | None:
    """`90`, `90s`, `15m`, `2h`, `3d`, `1w`, `1d 6h` -> seconds; None if not one. The syntax of
    `payorch clock advance` and scenarios (payorch_cli.durations), any case."""
    try:
        return durations.parse_duration(value.lower())
    except durations.DurationError:
        return None


class AdvanceClockDialog(ModalScreen[float | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                "Advance the simulator clock (it only moves forward)", classes="dialog-title"
            )
            yield OptionList(
                *(Option(f"+{key:<3} {label}", id=key) for key, label in CLOCK_PRESETS),
                id="presets",
            )
            yield Input(placeholder="or type e.g. 90m, 3d, 1d 6h, 3600", id="custom", compact=True)

    def on_mount(self) -> None:
        self.query_one("#presets", OptionList).focus()

    @on(OptionList.OptionSelected, "#presets")
    def _preset(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(parse_duration(event.option.id or ""))

    @on(Input.Submitted, "#custom")
    def _custom(self, event: Input.Submitted) -> None:
        seconds = parse_duration(event.value)
        if seconds is None:
            self.notify(f"Not a duration: {event.value!r}", severity="error")
            return
        self.dismiss(seconds)

    def action_cancel(self) -> None:
        self.dismiss(None)


class NamespaceDialog(ModalScreen[str | None]):
    """The namespace to watch: one of the server's (listed on open), or a name typed; empty
    for `default`. Down (or tab) goes from the name to the list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "to_list", "Namespaces", show=False),
    ]

    def __init__(self, current: str | None, load: Callable[[], list[str]] | None = None) -> None:
        super().__init__()
        self.current = current or "default"
        self.load = load
        self.names: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Switch namespace (now: {self.current})", classes="dialog-title")
            yield Input(placeholder="a namespace name; empty: default", id="namespace")
            yield OptionList(Option("loading the server's namespaces …", disabled=True), id="names")

    def on_mount(self) -> None:
        self.query_one("#namespace", Input).focus()
        if self.load is not None:
            self._load(self.load)

    @work(thread=True, exit_on_error=False)
    def _load(self, load: Callable[[], list[str]]) -> None:
        try:
            names, problem = load(), None
        except Exception as exc:  # refused (a production key), unreachable: a name is typed
            names, problem = [], str(exc)
        self.app.call_from_thread(self._show, names, problem)

    def _show(self, names: list[str], problem: str | None) -> None:
        self.names = names
        options = self.query_one("#names", OptionList)
        options.clear_options()
        for name in names:
            marker = "● " if name == self.current else "  "
            options.add_option(Option(marker + name, id=name))
        if problem or not names:
            options.add_option(Option(f"no list ({problem or 'none'}): type a name", disabled=True))
        if self.current in names:
            options.highlighted = names.index(self.current)

    def action_to_list(self) -> None:
        self.query_one("#names", OptionList).focus()

    @on(OptionList.OptionSelected, "#names")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.dismiss(event.option.id)

    @on(Input.Submitted, "#namespace")
    def _submitted(self, event: Input.Submitted) -> None:
        name = event.value.strip() or "default"
        if not re.fullmatch(NAMESPACE_NAME_RULE, name):
            self.notify(f"Not a namespace name: {name!r} ({NAMESPACE_NAME_RULE})", severity="error")
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)


class KeySwitcher(ModalScreen[Credential | None]):
    """The keys given with --api-key, then the fixtures' (`payorch keys`), loaded on open."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, given: list[str], fixtures: Path | None, current: str) -> None:
        super().__init__()
        self.given = given
        self.fixtures = fixtures
        self.current = current
        self.credentials: list[Credential] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label("Switch merchant / environment", classes="dialog-title")
            yield OptionList(Option("loading payorch keys …", disabled=True), id="keys")

    def on_mount(self) -> None:
        self.query_one("#keys", OptionList).focus()
        self._load()

    @work(thread=True, exit_on_error=False)
    def _load(self) -> None:
        try:
            credentials = switchable(self.given, self.fixtures)
            problem = None
        except Exception as exc:  # fixtures unreadable: the given keys still work
            credentials = switchable(self.given, include_fixtures=False)
            problem = f"fixture keys unavailable: {exc}"
        self.app.call_from_thread(self._show, credentials, problem)

    def _show(self, credentials: list[Credential], problem: str | None) -> None:
        self.credentials = credentials
        options = self.query_one("#keys", OptionList)
        options.clear_options()
        for index, credential in enumerate(credentials):
            marker = "● " if credential.key == self.current else "  "
            options.add_option(Option(marker + credential.label, id=str(index)))
        if problem:
            self.notify(problem, severity="warning")
        current = next((i for i, c in enumerate(credentials) if c.key == self.current), None)
        if current is not None:
            options.highlighted = current

    @on(OptionList.OptionSelected, "#keys")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None and self.credentials:
            self.dismiss(self.credentials[int(event.option.id)])

    def action_cancel(self) -> None:
        self.dismiss(None)
