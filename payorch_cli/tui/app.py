"""The `payorch tui` application: modes, global keys, the live connection, and actions.

The app owns the server session (a `Backend` for one key) and the live event stream, read in
a thread worker that reconnects by itself (stream.ReconnectBackoff). Each event updates the
screens directly (a transaction event carries its view) and marks what it makes stale
(balance, deliveries). While the stream is down the header says so; when it comes back every
screen reloads, because events may have been missed meanwhile.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, get_current_worker

from payorch_cli.client import ApiError
from payorch_cli.credentials import Credential, mask
from payorch_cli.tui import present
from payorch_cli.tui.backend import SIMULATE_ACTIONS, STATUSES, Backend, Identity
from payorch_cli.tui.messages import (
    ClockSynced,
    Failed,
    IdentityLoaded,
    ServerEvent,
    StreamLost,
    StreamOpened,
    StreamRefused,
)
from payorch_cli.tui.screens.base import STALE_AFTER, LiveScreen
from payorch_cli.tui.screens.deliveries import DeliveriesScreen, DeliveryScreen
from payorch_cli.tui.screens.detail import TransactionScreen
from payorch_cli.tui.screens.dialogs import (
    AdvanceClockDialog,
    ConfirmDialog,
    KeySwitcher,
    NamespaceDialog,
)
from payorch_cli.tui.screens.help import HELP_KEYS, HelpScreen, screen_keys, screen_name
from payorch_cli.tui.screens.main import MAIN_SCREENS
from payorch_cli.tui.screens.transactions import TransactionsScreen
from payorch_cli.tui.stream import (
    Envelope,
    EventStreamReader,
    Garbled,
    Opened,
    ReconnectBackoff,
)
from payorch_cli.tui.widgets.header import StatusHeader, clock_text

CLOCK_SYNC_SECONDS = 2.0  # another tool may move the clock: no event says so
EVENT_LOG_SIZE = 5_000  # events kept for the detail timelines (the API lists none per tx)
# Actions that end a payment or move money away: asked before they are sent.
CONFIRM = {
    "failed": ("Mark {tx} failed?", "The payment ends; payment.failed is sent."),
    "expired": ("Mark {tx} expired?", "The payment ends; payment.failed is sent."),
    "refunded": ("Refund {tx} in full?", "A provider-side refund: its amount leaves the balance."),
    "chargeback": ("Open a chargeback on {tx}?", "Its amount is frozen until the claim resolves."),
}


class PayorchApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "payorch"
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {
        main.mode: main.screen for main in MAIN_SCREENS
    }
    DEFAULT_MODE = MAIN_SCREENS[0].mode
    drift_report: Path | None = None  # `--drift FILE`: the report the Drift screen shows
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(main.key, f"switch_mode({main.mode!r})", main.title) for main in MAIN_SCREENS),
        Binding("a", "advance_clock", "Clock+"),
        Binding("k", "switch_key", "Key"),
        Binding("n", "switch_namespace", "Namespace", show=False),  # in the palette too
        Binding("r", "refresh", "Refresh", show=False),
        Binding("q", "quit", "Quit"),
        Binding(HELP_KEYS, "help", "Keys", show=False),
    ]

    def __init__(
        self,
        backend: Backend,
        *,
        keys: Iterable[str] = (),
        fixtures: Path | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.given_keys = list(dict.fromkeys([backend.api_key, *keys]))
        self.fixtures = fixtures
        # Injected so screenshots show a clock that does not tick.
        self.monotonic = monotonic
        self.identity: Identity | None = None
        self.team = ""  # owner and quota of the namespace watched, on a team server
        self.connection = "connecting"
        self.connection_detail = ""
        self.clock: ClockSynced | None = None
        self.event_log: deque[dict[str, Any]] = deque(maxlen=EVENT_LOG_SIZE)
        self.chargebacks: set[str] = set()  # the list view does not say; events do
        self.latencies: deque[float] = deque(maxlen=1_000)  # event read -> row updated, s
        self.notices: deque[tuple[str, str, str]] = deque(maxlen=200)
        self._last_failures: dict[tuple[str, str, str], float] = {}
        self._views: list[LiveScreen] = []
        self._headers: set[StatusHeader] = set()
        self._reader: EventStreamReader | None = None
        self._stream_worker: Worker[None] | None = None
        self._was_live = False
        self._clock_in_flight = False

    # -- lifecycle -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick_clock)
        self.set_interval(CLOCK_SYNC_SECONDS, self._sync_clock)
        self._start_session()

    def on_unmount(self) -> None:
        self._stop_stream()
        self.backend.close()

    def _start_session(self) -> None:
        self.identity, self.clock, self.team = None, None, ""
        self.event_log.clear()
        self.chargebacks.clear()
        self._set_connection("connecting")
        self._load_identity()
        self._sync_clock()
        self._start_stream()

    @property
    def online(self) -> bool:
        return self.connection in ("live", "polling")

    # -- views and headers register themselves ---------------------------------------------------

    def register_view(self, view: LiveScreen) -> None:
        self._views.append(view)

    def unregister_view(self, view: LiveScreen) -> None:
        if view in self._views:
            self._views.remove(view)

    def register_header(self, header: StatusHeader) -> None:
        self._headers.add(header)
        self._paint_header(header)

    def unregister_header(self, header: StatusHeader) -> None:
        self._headers.discard(header)

    def _paint_header(self, header: StatusHeader) -> None:
        header.server = self.backend.base_url
        identity = self.identity
        header.merchant = identity.merchant_name if identity else mask(self.backend.api_key)
        header.environment = identity.environment if identity else ""
        header.team = self.team
        header.connection = self.connection
        header.detail = self.connection_detail
        clock = self.clock
        header.clock = (
            clock_text(clock.now, clock.offset_seconds, self.monotonic() - clock.at)
            if clock
            else ""
        )

    def _paint_headers(self) -> None:
        for header in list(self._headers):
            self._paint_header(header)

    def _set_connection(self, state: str, detail: str = "") -> None:
        self.connection, self.connection_detail = state, detail
        self._paint_headers()

    def stale(self, kinds: AbstractSet[str]) -> None:
        for view in list(self._views):
            view.mark_stale(kinds)

    def reload_all(self) -> None:
        for view in list(self._views):
            view.reload(quiet=True)

    # -- identity and clock ----------------------------------------------------------------------

    @work(thread=True, group="identity", exclusive=True, exit_on_error=False)
    def _load_identity(self) -> None:
        try:
            self.post_message(IdentityLoaded(self.backend.ping(), self.backend.team()))
        except ApiError as exc:
            self.post_message(Failed("Checking the key", exc, quiet=True))

    def on_identity_loaded(self, message: IdentityLoaded) -> None:
        self.identity, self.team = message.identity, message.team
        self._paint_headers()
        self.screen.refresh_bindings()  # production keys get no simulate actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The footer does not offer the screen already shown.
        return not (action == "switch_mode" and parameters and parameters[0] == self.current_mode)

    def _sync_clock(self) -> None:
        if self.identity is not None and not self.identity.sandbox:
            return  # the control plane refuses live keys: no clock to show
        if self._clock_in_flight:
            return  # a hung server must not pile up blocked threads, one per tick
        self._clock_in_flight = True
        self._fetch_clock()

    @work(thread=True, group="clock", exit_on_error=False)
    def _fetch_clock(self) -> None:
        try:
            clock = self.backend.clock()
        except ApiError:
            return  # unreachable or refused: the header already says why
        finally:
            self._clock_in_flight = False
        now = clock.get("now")
        offset = present.decimal(clock.get("offsetSeconds"))
        if isinstance(now, str):
            self.post_message(ClockSynced(now, float(offset or 0), self.monotonic()))

    def on_clock_synced(self, message: ClockSynced) -> None:
        moved = self.clock is not None and message.offset_seconds > self.clock.offset_seconds
        self.clock = message
        self._paint_headers()
        if moved:  # someone advanced it: settlements, releases and retries may have run
            self.stale(STALE_AFTER["clock_moved"])

    def _tick_clock(self) -> None:
        if self.clock is not None:
            self._paint_headers()

    # -- the live stream -------------------------------------------------------------------------

    def _start_stream(self) -> None:
        self._stop_stream()
        self._stream_worker = self._run_stream(self.backend)

    def _stop_stream(self) -> None:
        if self._stream_worker is not None:
            self._stream_worker.cancel()
            self._stream_worker = None
        if self._reader is not None:
            self._reader.close()  # wakes the blocked read so the thread ends now
            self._reader = None

    @work(thread=True, group="stream", exit_on_error=False)
    def _run_stream(self, backend: Backend) -> None:
        worker = get_current_worker()
        backoff = ReconnectBackoff()
        while not worker.is_cancelled:
            reader = backend.open_stream()
            self._reader = reader
            reason = "the server closed the event stream"
            try:
                for frame in reader.frames():
                    if worker.is_cancelled:
                        return
                    if isinstance(frame, Opened):
                        backoff.opened()
                        self.post_message(StreamOpened())
                    elif isinstance(frame, Envelope):
                        self.post_message(ServerEvent(frame.event, time.perf_counter()))
                    elif isinstance(frame, Garbled):
                        self.post_message(
                            Failed("Event stream", ApiError("bad_event", frame.text, 0))
                        )
            except ApiError as exc:
                if exc.status in (400, 401, 403, 404):
                    self.post_message(StreamRefused(exc))
                    return
                reason = exc.message
            except Exception as exc:  # whatever happens, the loop reconnects
                reason = repr(exc)
            finally:
                reader.close()
            if worker.is_cancelled:
                return
            delay = backoff.next_wait()
            self.post_message(StreamLost(reason, delay))
            worker.cancelled_event.wait(delay)

    def on_stream_opened(self, message: StreamOpened) -> None:
        reconnected = self.connection == "disconnected" or self._was_live
        self._set_connection("live")
        if reconnected:
            self.notify("Reconnected: reloading.", title="server")
            self._load_identity()
            self._sync_clock()
        # Also the first time: an event since the screens' first load would be missed.
        self.reload_all()
        self._was_live = True

    def on_stream_lost(self, message: StreamLost) -> None:
        if self.connection != "disconnected":
            self.notify(f"Lost the server: {message.reason}", severity="warning", title="server")
        self._set_connection("disconnected", f"retry in {message.retry_in:g}s")

    def on_stream_refused(self, message: StreamRefused) -> None:
        error = message.error
        if error.code == "production_key_refused" or error.status == 404:
            # Live keys get no control plane: show the data by refetching the visible page.
            self._set_connection("polling", "no event stream for this key")
            return
        self._set_connection("disconnected", error.code)
        self.notify(f"{error.code}: {error.message}", severity="error", title="event stream")

    def on_server_event(self, message: ServerEvent) -> None:
        event = message.event
        self.event_log.append(event)
        kind = str(event.get("type") or "")
        data = event.get("data")
        if isinstance(data, dict):
            if kind == "chargeback.created" and isinstance(data.get("id"), str):
                self.chargebacks.add(data["id"])
            if kind.startswith("payment.") or kind == "chargeback.created":
                self.apply_transaction(data)
                self.latencies.append(time.perf_counter() - message.received)
        self.stale(STALE_AFTER["event"])

    def apply_transaction(self, tx: dict[str, Any]) -> None:
        for view in list(self._views):
            try:
                view.apply_transaction(tx)
            except Exception as exc:  # one odd event must not take the UI down
                self.notify(f"Could not apply an event: {exc!r}", severity="error")

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        # Kept as plain data too: tests (and a future log view) read what the user was told.
        self.notices.append((severity, title, message))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    # -- errors ----------------------------------------------------------------------------------

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        error = message.error
        if error.code == "connection_failed" and (
            message.quiet or self.connection == "disconnected"
        ):
            return  # the header already says the server is gone
        # A failure that repeats (a bad answer to every refetch) is shown once per 10 s.
        key = (message.what, error.code, error.message)
        now = self.monotonic()
        if now - self._last_failures.get(key, -1e9) < 10.0:
            return
        self._last_failures[key] = now
        self.notify(
            f"[b]{error.code}[/b]: {_escape(error.message)}",
            title=message.what,
            severity="error",
            timeout=8,
        )

    # -- actions ---------------------------------------------------------------------------------

    def open_transaction(self, transaction_id: str) -> None:
        self.push_screen(TransactionScreen(transaction_id))

    def request_simulate(self, transaction_id: str, action: str) -> None:
        if action not in SIMULATE_ACTIONS:
            return
        confirm = CONFIRM.get(action)
        if confirm is None:
            self._simulate(transaction_id, action)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._simulate(transaction_id, action)

        question, detail = confirm
        self.push_screen(ConfirmDialog(question.format(tx=transaction_id), detail), answered)

    @work(thread=True, group="simulate", exit_on_error=False)
    def _simulate(self, transaction_id: str, action: str) -> None:
        backend = self.backend
        try:
            outcome = backend.simulate(transaction_id, action)
            tx = backend.payment(transaction_id)
        except ApiError as exc:
            self.post_message(Failed(f"Mark {action}", exc))
            return
        fired = outcome.get("eventsFired")
        events = ", ".join(map(str, fired)) if isinstance(fired, list) else ""
        self.call_from_thread(self._simulated, tx, f"{transaction_id} → {tx.get('status')}", events)

    def _simulated(self, tx: dict[str, Any], what: str, events: str) -> None:
        # The stream brings the same change; applying the fetched view too keeps the screen
        # right even while the stream is down.
        self.apply_transaction(tx)
        self.stale(STALE_AFTER["simulated"])
        self.notify(events or "no events", title=what)

    def request_replay(self, delivery: dict[str, Any]) -> None:
        webhook_id, delivery_id = delivery.get("webhookId"), delivery.get("id")
        if not isinstance(webhook_id, str) or not isinstance(delivery_id, str):
            self.notify("This delivery has no id to replay.", severity="error")
            return
        self._replay(webhook_id, delivery_id)

    @work(thread=True, group="replay", exit_on_error=False)
    def _replay(self, webhook_id: str, delivery_id: str) -> None:
        try:
            delivery = self.backend.replay(webhook_id, delivery_id)
        except ApiError as exc:
            self.post_message(Failed(f"Replay {delivery_id}", exc))
            return
        attempts = delivery.get("attempts")
        last = attempts[-1] if isinstance(attempts, list) and attempts else None
        status = present.http_status_text(last if isinstance(last, dict) else None).plain
        self.call_from_thread(self._replayed, f"{delivery_id}: {status} in {present.latency(last)}")

    def _replayed(self, summary: str) -> None:
        self.stale(STALE_AFTER["replayed"])
        self.notify(summary, title="Replayed")

    def action_advance_clock(self) -> None:
        if self.identity is not None and not self.identity.sandbox:
            self.notify(
                "The simulated clock needs a sandbox key (the control plane refuses production "
                "keys). Press k to switch.",
                title="Clock",
                severity="warning",
            )
            return

        def chosen(seconds: float | None) -> None:
            if seconds:
                self.advance_clock(seconds)

        self.push_screen(AdvanceClockDialog(), chosen)

    def advance_clock(self, seconds: float) -> None:
        self._advance(seconds)

    @work(thread=True, group="clock-advance", exit_on_error=False)
    def _advance(self, seconds: float) -> None:
        try:
            clock = self.backend.advance_clock(seconds)
        except ApiError as exc:
            self.post_message(Failed("Advance clock", exc))
            return
        now = clock.get("now")
        offset = present.decimal(clock.get("offsetSeconds"))
        if isinstance(now, str):
            self.post_message(ClockSynced(now, float(offset or 0), self.monotonic()))
        self.call_from_thread(self._advanced, seconds, present.full_time(now))

    def _advanced(self, seconds: float, now: str) -> None:
        self.stale(STALE_AFTER["clock_moved"])
        self.notify(f"now {now}", title=f"Clock {present.duration(seconds)}")

    def action_switch_key(self) -> None:
        def chosen(credential: Credential | None) -> None:
            if credential is not None and credential.key is not None:
                self.switch_key(credential.key)

        self.push_screen(KeySwitcher(self.given_keys, self.fixtures, self.backend.api_key), chosen)

    def switch_key(self, api_key: str) -> None:
        if api_key == self.backend.api_key:
            return
        self._use_backend(Backend(self.backend.root_url, api_key, namespace=self.backend.namespace))

    def action_switch_namespace(self) -> None:
        def chosen(name: str | None) -> None:
            if name is not None and name != (self.backend.namespace or "default"):
                self._open_namespace(name)

        backend = self.backend
        self.push_screen(NamespaceDialog(backend.namespace, backend.namespaces), chosen)

    @work(thread=True, group="namespace", exit_on_error=False)
    def _open_namespace(self, name: str) -> None:
        """The same key's counterpart in namespace `name` (asked of the server), then every
        view reloads from there."""
        try:
            backend = Backend(self.backend.root_url, self.backend.given_key, namespace=name)
        except ApiError as exc:
            self.post_message(Failed(f"Namespace {name}", exc))
            return
        self.call_from_thread(self._use_backend, backend)

    def _use_backend(self, backend: Backend) -> None:
        self._stop_stream()
        old, self.backend = self.backend, backend
        old.close()
        self._was_live = False
        self._start_session()
        self.call_later(self._back_to_base)
        self.reload_all()

    def _back_to_base(self) -> None:
        # A detail over the list shows the previous merchant's object: leave it. (Details left
        # open in other modes reload, and say so if the new key cannot see their object.)
        base = self.screen_stack[0] if self.screen_stack else None
        if base is not None and self.screen is not base:
            base.pop_until_active()

    def action_help(self) -> None:
        screen = self.screen
        if not isinstance(screen, HelpScreen):
            self.push_screen(HelpScreen(screen_name(screen), screen_keys(screen)))

    def action_refresh(self) -> None:
        self._load_identity()
        self._sync_clock()
        self.reload_all()

    # -- the command palette ---------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for main in MAIN_SCREENS:
            yield SystemCommand(
                f"Show {main.mode}",
                f"key {main.key}",
                lambda mode=main.mode: self.switch_mode(mode),
            )
        selected = getattr(screen, "selected_transaction", None)
        tx_id = selected() if callable(selected) else None
        applicable = getattr(screen, "applicable_actions", None)
        allowed = applicable() if callable(applicable) else ()
        if tx_id:
            for action, key in zip(SIMULATE_ACTIONS, "pfxuc", strict=True):
                if action not in allowed:
                    continue  # the payment's status does not allow it
                note = " (asks first)" if action in CONFIRM else ""
                yield SystemCommand(
                    f"Mark {action}: {tx_id}",
                    f"key {key}: POST /payments/{{id}}/simulate{note}",
                    lambda action=action, tx=tx_id: self.request_simulate(tx, action),
                )
        if isinstance(screen, DeliveriesScreen | DeliveryScreen):
            delivery = (
                screen.selected_delivery()
                if isinstance(screen, DeliveriesScreen)
                else screen.delivery
            )
            if delivery:
                yield SystemCommand(
                    f"Replay delivery {present.text(delivery.get('id'))}",
                    "key R: send the same event again, freshly signed",
                    lambda d=delivery: self.request_replay(d),
                )
        if isinstance(screen, TransactionsScreen):
            for status in (None, *STATUSES):
                yield SystemCommand(
                    f"Filter status: {status or 'all'}",
                    "key s cycles",
                    lambda s=status, scr=screen: scr.set_status(s),
                )
            yield SystemCommand("Search transactions", "key /", screen.action_search)
        for label, seconds in (("1 hour", 3_600), ("1 day", 86_400), ("2 days", 172_800)):
            yield SystemCommand(
                f"Advance clock {label}",
                "POST /_sim/clock/advance",
                lambda s=seconds: self.advance_clock(s),
            )
        yield SystemCommand("Advance clock…", "key a", self.action_advance_clock)
        yield SystemCommand("Switch merchant / environment…", "key k", self.action_switch_key)
        yield SystemCommand("Switch namespace…", "key n", self.action_switch_namespace)
        yield SystemCommand("Refresh everything", "key r", self.action_refresh)


def _escape(text: str) -> str:
    return text.replace("[", r"\[")


def run(
    base_url: str | None,
    keys: list[str],
    fixtures: Path | None = None,
    namespace: str | None = None,
    drift_report: Path | None = None,
) -> None:
    """Start the TUI on the first key (in `namespace`); the others are offered by the key
    switcher."""
    backend = Backend(base_url or "", keys[0] if keys else "", namespace=namespace)
    app = PayorchApp(backend, keys=keys[1:], fixtures=fixtures)
    app.drift_report = drift_report
    app.run()
