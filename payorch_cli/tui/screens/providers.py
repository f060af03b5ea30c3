"""Providers: every simulated provider behind the cascade, what it does now (behaviour, active
and scheduled incidents) and what it has done (counts), with a key to start a 10-minute outage
on the selected one, a key to end the selected one's incidents (an outage over early, the
scheduled ones cancelled) and a key to put every provider back as the fixtures define it.

No event says a provider changed: its counts move with any merchant's production charges and
another tool (`payorch providers`, a scenario) may script it, and incidents end when the clock
passes them. So while it is shown the screen refetches the list (one request) every couple of
seconds, and also soon after an event or a clock move.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from payorch.vocabulary import OUTAGE_BEHAVIOUR
from payorch_cli.client import ApiError
from payorch_cli.render.providers import clock_time, ended_text, is_disturbed
from payorch_cli.tui.messages import Failed
from payorch_cli.tui.screens.base import LiveScreen, needs_sandbox_text, sandbox_only
from payorch_cli.tui.screens.dialogs import ConfirmDialog
from payorch_cli.tui.widgets.providers import ProvidersTable

POLL_SECONDS = 2.0
OUTAGE_SECONDS = 600.0  # the `o` key: a 10-minute outage, as in the example


class ProvidersScreen(LiveScreen):
    # Every event marks the balance stale and a clock move the transactions: both may have
    # moved a provider's counts or ended an incident.
    WATCHES = frozenset({"balance", "transactions"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "outage", "Outage 10m"),
        Binding("e", "end_incidents", "End incidents"),
        Binding("R", "reset", "Reset all"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.providers: dict[str, dict[str, Any]] = {}
        self.problem: ApiError | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        yield Static(id="providers-summary")
        yield ProvidersTable(id="providers")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one(ProvidersTable).focus()
        self.set_interval(POLL_SECONDS, self._poll)

    def _poll(self) -> None:
        if self.is_current:
            self.reload(quiet=True)

    def reload(self, *, quiet: bool = False) -> None:
        self._fetch(quiet)

    @work(thread=True, group="providers", exclusive=True, exit_on_error=False)
    def _fetch(self, quiet: bool) -> None:
        try:
            providers = self.payorch.backend.providers()
        except ApiError as exc:
            if not sandbox_only(exc):  # a production key: said in place, not as an error
                self.payorch.post_message(Failed("Loading providers", exc, quiet=quiet))
            self.deliver(self._refused, exc)
            return
        self.deliver(self._show, providers)

    def _show(self, providers: list[dict[str, Any]]) -> None:
        self.problem = None
        self.providers = {str(p.get("id")): p for p in providers}
        self.query_one(ProvidersTable).show(providers)
        disturbed = sum(1 for p in providers if is_disturbed(p))
        scheduled = sum(
            1
            for p in providers
            for i in p.get("incidents") or []
            if isinstance(i, dict) and not i.get("active")
        )
        self.query_one("#providers-summary", Static).update(
            Text.assemble(
                (f" {len(providers)} providers", "bold"),
                (f" · {disturbed} not accepting all" if disturbed else " · all accepting", ""),
                (f" · {scheduled} incident(s) ahead" if scheduled else "", ""),
                # The rule that surprises: these behaviours never touch a sandbox payment.
                (" · sandbox always accepts", "dim"),
            )
        )

    def _refused(self, error: ApiError) -> None:
        self.problem = error
        if sandbox_only(error):
            self.providers = {}
            self.query_one(ProvidersTable).show([])
            self.query_one("#providers-summary", Static).update(needs_sandbox_text("Providers"))
            return
        hint = (
            "providers are scripted with a sandbox secret key; press k to switch"
            if error.status in (401, 403)
            else error.message
        )
        self.query_one("#providers-summary", Static).update(
            Text.assemble((f" {error.code}", "bold red"), (f": {hint}", "dim"))
        )

    # -- actions ---------------------------------------------------------------------------------

    def selected_provider(self) -> dict[str, Any] | None:
        provider_id = self.query_one(ProvidersTable).selected_id()
        return None if provider_id is None else self.providers.get(provider_id)

    def _acted_on(self) -> str | None:
        """The selected provider's id, or None after telling the user nothing is selected."""
        provider = self.selected_provider()
        if provider is None:
            self.notify("No provider selected.", severity="warning")
            return None
        return str(provider.get("id"))

    def action_outage(self) -> None:
        provider_id = self._acted_on()
        if provider_id is not None:
            self._start_outage(provider_id)

    @work(thread=True, group="provider-action", exit_on_error=False)
    def _start_outage(self, provider_id: str) -> None:
        try:
            incident = self.payorch.backend.start_incident(
                provider_id, OUTAGE_BEHAVIOUR, OUTAGE_SECONDS
            )
        except ApiError as exc:
            self.payorch.post_message(Failed(f"Outage on {provider_id}", exc))
            return
        until = clock_time(incident.get("endsAt"))
        self.deliver(self._acted, f"{OUTAGE_BEHAVIOUR} until {until} (simulated)", provider_id)

    def action_end_incidents(self) -> None:
        # No question asked, as for `o`: it touches the selected provider alone, and the notice
        # says what ended (`R`, which undoes every provider's scripting, asks).
        provider_id = self._acted_on()
        if provider_id is not None:
            self._end_incidents(provider_id)

    @work(thread=True, group="provider-action", exit_on_error=False)
    def _end_incidents(self, provider_id: str) -> None:
        try:
            ended = self.payorch.backend.end_incidents(provider_id)
        except ApiError as exc:
            self.payorch.post_message(Failed(f"End incidents of {provider_id}", exc))
            return
        self.deliver(self._acted, ended_text(ended), provider_id)

    def action_reset(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self._reset()

        self.app.push_screen(
            ConfirmDialog(
                "Put every provider back as the fixtures define it?",
                "Behaviours, rates, callbacks and incidents of every provider; counts restart.",
            ),
            answered,
        )

    @work(thread=True, group="provider-action", exit_on_error=False)
    def _reset(self) -> None:
        try:
            providers = self.payorch.backend.reset_providers()
        except ApiError as exc:
            self.payorch.post_message(Failed("Reset providers", exc))
            return
        self.deliver(self._acted, f"{len(providers)} providers back to the fixtures", "providers")

    def _acted(self, what: str, title: str) -> None:
        self.notify(what, title=title)
        self.reload(quiet=True)
