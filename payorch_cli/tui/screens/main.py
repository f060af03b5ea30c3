"""The TUI's main screens, in key order: each is a mode of the app, switched to by its number key
and listed in the command palette. A new main screen is one line here (plus its screen and
widget modules); the app builds its modes, bindings and palette entries from this list."""

from __future__ import annotations

from typing import NamedTuple

from textual.screen import Screen

from payorch_cli.tui.screens.balances import BalancesScreen
from payorch_cli.tui.screens.deliveries import DeliveriesScreen
from payorch_cli.tui.screens.drift import DriftScreen
from payorch_cli.tui.screens.providers import ProvidersScreen
from payorch_cli.tui.screens.requests import RequestsScreen
from payorch_cli.tui.screens.transactions import TransactionsScreen


class MainScreen(NamedTuple):
    mode: str
    key: str
    title: str
    screen: type[Screen[None]]


MAIN_SCREENS: tuple[MainScreen, ...] = (
    MainScreen("transactions", "1", "Transactions", TransactionsScreen),
    MainScreen("balances", "2", "Balances", BalancesScreen),
    MainScreen("deliveries", "3", "Deliveries", DeliveriesScreen),
    MainScreen("requests", "4", "Requests", RequestsScreen),
    MainScreen("providers", "5", "Providers", ProvidersScreen),
    MainScreen("drift", "6", "Drift", DriftScreen),
)
