"""The spec's fixed names, listed once for the simulator and the CLI (trigger, scenarios, TUI):
the API's path prefix, event types, transaction statuses, paymentData method slugs, simulate
actions and what a simulated provider can be scripted to do. It imports nothing, so the CLI's
start stays cheap. A table that needs more than the names (the simulator's transitions, the CLI's
typer choices) keeps its own copy, checked against these by tests/unit/test_vocabulary.py; the
OpenAPI document's enums marked `x-vocabulary` are filled from here when it is built."""

from __future__ import annotations

# Where the versioned API is served (the control plane's /_sim paths are outside it, and aliased
# under it too).
API_PREFIX = "/api/v1"

# A namespace's name (design.md 1.6). The servers, the proxy's configuration, `payorch ns`, the
# TUI and the MCP server all check a name by this one pattern, so none accepts a name another
# refuses (tests/unit/test_vocabulary.py finds a second spelling).
NAMESPACE_NAME_RULE = "[a-z0-9][a-z0-9-]{0,39}"

# The two endpoints that carry their credential in the JSON body (keys, or a refresh token), not
# in `Authorization`: the front and the proxy read it there to find the request's namespace.
CREDENTIAL_IN_BODY_PATHS: tuple[str, ...] = (
    f"{API_PREFIX}/auth/token",
    f"{API_PREFIX}/auth/refresh",
)

EVENT_TYPES: tuple[str, ...] = (
    "payment.completed",
    "payment.failed",
    "payment.refunded",
    "chargeback.created",
    "claim.opened",
    "claim.resolved",
    "settlement.closed",
    "settlement.pdf_ready",
    "withdrawal.completed",
    "withdrawal.failed",
    "payout.completed",
    "payout.failed",
    "payment.captured",
)

# Transaction statuses, as the list filter takes them ("chargeback" lists completed payments that
# carry a chargeback claim).
TRANSACTION_STATUSES: tuple[str, ...] = (
    "pending",
    "completed",
    "failed",
    "refunded",
    "expired",
    "chargeback",
)

# The `paymentData.method` slugs, in the spec's order (also the legacy `method` filter values).
PAYMENT_METHOD_SLUGS: tuple[str, ...] = (
    "card",
    "debit",
    "bank_transfer",
    "wire",
    "spei",
    "pix",
    "oxxo",
    "boleto",
    "voucher",
    "online_payment",
    "applepay",
    "googlepay",
    "crypto",
)

# The actions of POST /payments/{id}/simulate, in the spec's order (what each does:
# simulator.domain.states.SIMULATE_ACTIONS).
PAYMENT_SIMULATE_ACTIONS: tuple[str, ...] = ("paid", "failed", "expired", "refunded", "chargeback")

# The actions of POST /me/payout/send/{id}/simulate (what each does:
# simulator.domain.states.PAYOUT_SIMULATE_ACTIONS).
PAYOUT_SIMULATE_ACTIONS: tuple[str, ...] = (
    "completed",
    "paid",
    "failed",
    "rejected",
    "refunded",
    "returned",
    "processing",
)

# What a simulated provider does with a production call, per kind of provider, in the order
# errors and help list them (PATCH /_sim/providers/{id} and its incidents take them): the one
# table the provider world, the CLI, the TUI and the OpenAPI document read.
PROVIDER_BEHAVIOURS_BY_KIND: dict[str, tuple[str, ...]] = {
    "payin": ("accept", "decline", "outage", "no_instructions", "timeout"),
    "payout": ("accept", "reject", "outage"),
}
# Every behaviour, pay-in ones first.
PROVIDER_BEHAVIOURS: tuple[str, ...] = tuple(
    dict.fromkeys(b for behaviours in PROVIDER_BEHAVIOURS_BY_KIND.values() for b in behaviours)
)
# Two every provider takes: the one that takes every call (any other disturbs its traffic), and
# the one the TUI's outage key schedules.
ACCEPTING_BEHAVIOUR = "accept"
OUTAGE_BEHAVIOUR = "outage"
# What a provider's callback reports, per kind, and how it is delivered.
PROVIDER_CALLBACK_OUTCOMES_BY_KIND: dict[str, tuple[str, ...]] = {
    "payin": ("paid", "failed"),
    "payout": ("completed", "failed", "rejected", "refunded", "returned"),
}
PROVIDER_CALLBACK_OUTCOMES: tuple[str, ...] = tuple(
    dict.fromkeys(o for outcomes in PROVIDER_CALLBACK_OUTCOMES_BY_KIND.values() for o in outcomes)
)
PROVIDER_CALLBACK_MODES: tuple[str, ...] = ("once", "duplicate")
