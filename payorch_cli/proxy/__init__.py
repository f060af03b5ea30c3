"""`payorch proxy` (design.md 1.9): forward to a real sandbox, record each exchange redacted in
the recording format of payorch_cli/recording/format.py, and write the scenario of the traffic.
Imported only when `payorch proxy` runs (aiohttp)."""
