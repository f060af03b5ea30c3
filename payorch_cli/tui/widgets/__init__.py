"""Widgets, one module per screen region (header; transactions; detail; balances; deliveries)."""
