"""`payorch drift`: replay a recording (payorch_cli/recording) against payorch and compare.

compare.py (pure: two answers -> differences), ids.py (the id and credential map), events.py
(webhooks compared per object), replay.py (the I/O: sending, the clock, payorch's events),
report.py (the report as data, text, JSON and HTML).
"""
