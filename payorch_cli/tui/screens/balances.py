"""Balances: pay-in available/pending/frozen/reserve, fee summary, movements; payout balances.

The pay-in balance is derived from the ledger by the server, so it is refetched (one request)
after any event and after the clock moves; payout balances come from
`GET /me/payout/balance`, shown as "not offered" where that route is a 404.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal

from payorch_cli.client import ApiError
from payorch_cli.tui.messages import Failed
from payorch_cli.tui.screens.base import LiveScreen
from payorch_cli.tui.widgets.balances import FeesPanel, MovementsTable, PayinPanel, PayoutPanel


class BalancesScreen(LiveScreen):
    WATCHES = frozenset({"balance"})

    def compose(self) -> ComposeResult:
        yield from self.compose_header()
        with Horizontal(id="balance-panels"):
            yield PayinPanel(id="payin", classes="panel")
            yield FeesPanel(id="fees", classes="panel")
            yield PayoutPanel(id="payout", classes="panel")
        yield MovementsTable(id="movements")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one(PayinPanel).show(None)
        self.query_one(FeesPanel).show(None)
        self.query_one(PayoutPanel).show(None, loaded=False)
        self.query_one(MovementsTable).focus()

    def reload(self, *, quiet: bool = False) -> None:
        self._fetch()

    @work(thread=True, group="balances", exclusive=True, exit_on_error=False)
    def _fetch(self) -> None:
        backend = self.payorch.backend
        try:
            balance = backend.balance()
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading the balance", exc))
            return
        payout: dict[str, Any] | None
        try:
            payout = backend.payout_balance()
        except ApiError as exc:
            self.payorch.post_message(Failed("Loading payout balances", exc, quiet=True))
            payout = None
        self.deliver(self._show, balance, payout)

    def _show(self, balance: dict[str, Any], payout: dict[str, Any] | None) -> None:
        self.balance = balance
        self.query_one(PayinPanel).show(balance)
        self.query_one(FeesPanel).show(balance)
        self.query_one(PayoutPanel).show(payout)
        self.query_one(MovementsTable).show(balance)
