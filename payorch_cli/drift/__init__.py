"""`payorch drift`: replay a recording (payorch_cli/recording) against payorch and compare.

compare.py (pure: two answers -> differences), ids.py (the id and credential map), events.py
(webhooks compared per object), replay.py (the I/O: sending, the clock, payorch's events)
and payorch_cli/render/drift.py (the report as data, text at 80 columns, JSON and HTML).
"""
