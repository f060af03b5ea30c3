"""Screens: transactions, transaction detail, balances, deliveries, delivery detail, dialogs."""
