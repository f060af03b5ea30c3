"""Team mode (design.md 1.10): tokens, owners and quotas, the audit trail. Plain Python: no
aiohttp here; simulator/http/handlers/team.py serves it."""
