"""The one URL table: every path the server answers, with its handler, written out in full so that
grepping a path lands here. Services are built by the composition root (`simulator/app.py`)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from payorch.vocabulary import API_PREFIX
from simulator.http.handlers import (
    account,
    checkout,
    deposits,
    meta,
    namespaces,
    payments,
    payouts,
    providers,
    request_log,
    sim,
    state,
    team,
    trace,
    webhooks,
)
from simulator.http.handlers import auth as auth_handlers
from simulator.http.keys import SETTINGS
from simulator.http.metrics_endpoint import metrics_endpoint
from simulator.http.pages import checkout as checkout_pages
from simulator.http.pages import provider


def setup_routes(app: web.Application, static_dir: str) -> None:
    r = app.router
    r.add_post("/api/v1/auth/token", auth_handlers.issue_token)
    r.add_post("/api/v1/auth/refresh", auth_handlers.refresh_token)
    r.add_get("/api/v1/ping", account.ping)
    r.add_get("/api/v1/me", account.me)
    r.add_get("/api/v1/me/balance", account.balance)
    r.add_get("/api/v1/payment-methods", account.payment_methods)

    # Pay-ins. /transactions are the spec's legacy aliases of the list, get and create.
    r.add_post("/api/v1/payments", payments.create_payment)
    r.add_get("/api/v1/payments", payments.list_payments)
    r.add_get("/api/v1/payments/{id}", payments.get_payment)
    r.add_post("/api/v1/transactions", payments.create_payment)
    r.add_get("/api/v1/transactions", payments.list_payments)
    r.add_get("/api/v1/transactions/{id}", payments.get_payment)
    r.add_post("/api/v1/payments/{id}/refund", payments.refund_payment)
    r.add_post("/api/v1/payments/{id}/simulate", payments.simulate_payment)
    r.add_get("/api/v1/claims/{id}", payments.get_claim)
    r.add_get("/api/v1/openapi.json", meta.openapi_document)
    r.add_get("/", meta.landing)

    r.add_get("/_sim/clock", sim.get_clock)
    r.add_post("/_sim/clock/advance", sim.advance_clock)
    r.add_post("/_sim/reset", sim.reset_server)
    # The request log; /stream before {requestId}, which would take it.
    r.add_get("/_sim/requests", request_log.list_requests)
    r.add_get("/_sim/requests/stream", request_log.request_stream)
    r.add_get("/_sim/requests/{requestId}", request_log.get_request)
    r.add_get("/_sim/coverage", sim.get_coverage)
    r.add_get("/_sim/payment-methods", sim.payment_method_requirements)
    r.add_get("/_sim/provider/{id}", provider.provider_page)
    r.add_post("/_sim/provider/{id}/{action}", provider.provider_action)
    r.add_static("/static", static_dir, append_version=False)
    # Browsers ask for /favicon.ico wherever no icon is linked (a JSON document, the status
    # endpoint opened by hand): the pages' icon, rather than a 404 in the console.
    r.add_get("/favicon.ico", meta.favicon(Path(static_dir) / "favicon.svg"))

    # Hosted checkout: the session API, then the buyer's pages.
    r.add_post("/api/v1/checkout/sessions", checkout.create_session)
    r.add_get("/api/v1/checkout/sessions/{token}", checkout.get_session)
    r.add_post("/api/v1/checkout/sessions/{token}/select", checkout.select_method)
    r.add_get("/checkout/{token}", checkout_pages.picker_page)
    r.add_post("/checkout/{token}/select", checkout_pages.select_page)
    r.add_get("/c/{transaction_id}", checkout_pages.transaction_page)
    r.add_get("/c/{transaction_id}/status", checkout_pages.transaction_status)

    # Webhook subscriptions and deliveries, the live event stream, control-plane withdrawals.
    r.add_post("/api/v1/webhooks", webhooks.create_webhook)
    r.add_get("/api/v1/webhooks", webhooks.list_webhooks)
    r.add_get("/api/v1/webhooks/{id}", webhooks.get_webhook)
    r.add_patch("/api/v1/webhooks/{id}", webhooks.update_webhook)
    r.add_delete("/api/v1/webhooks/{id}", webhooks.delete_webhook)
    r.add_post("/api/v1/webhooks/{id}/rotate-secret", webhooks.rotate_secret)
    r.add_get("/api/v1/webhooks/{id}/deliveries", webhooks.list_deliveries)
    r.add_post("/api/v1/webhooks/{id}/deliveries/{deliveryId}/replay", webhooks.replay_delivery)
    r.add_get("/_sim/events", webhooks.event_stream)
    r.add_post("/_sim/webhooks/{id}/secret", webhooks.set_secret)
    r.add_post("/_sim/withdrawals", webhooks.create_withdrawal)
    r.add_get("/_sim/withdrawals/{id}", webhooks.get_withdrawal)

    # Payouts: the merchant's payout account, per environment.
    r.add_get("/api/v1/me/payout/methods", payouts.list_methods)
    r.add_get("/api/v1/me/payout/currencies", payouts.list_currencies)
    r.add_get("/api/v1/me/payout/balance", payouts.get_balance)
    r.add_post("/api/v1/me/payout/fund-sandbox", payouts.fund_sandbox)
    r.add_post("/api/v1/me/payout/transfer", payouts.transfer)
    r.add_get("/api/v1/me/payout/swap", payouts.quote_swap)
    r.add_post("/api/v1/me/payout/swap", payouts.swap)
    r.add_post("/api/v1/me/payout/send", payouts.send_payout)
    r.add_get("/api/v1/me/payout/send", payouts.list_payouts)
    r.add_get("/api/v1/me/payout/send/{id}", payouts.get_payout)
    r.add_post("/api/v1/me/payout/send/{id}/simulate", payouts.simulate_payout)

    # Deposit accounts (CLABE), and the control plane's incoming transfer.
    r.add_get("/api/v1/me/deposit-methods", deposits.list_deposit_methods)
    r.add_post("/api/v1/me/deposit-accounts", deposits.create_account)
    r.add_get("/api/v1/me/deposit-accounts", deposits.list_accounts)
    r.add_get("/api/v1/me/deposit-accounts/{id}", deposits.get_account)
    r.add_get("/api/v1/me/deposit-accounts/{id}/deposits", deposits.list_deposits)
    r.add_post("/_sim/deposits", deposits.simulate_deposit)
    r.add_post("/_sim/deposit-accounts/{id}/disable", deposits.disable_account)

    # Named saved states of the whole server (a restore is a reset to a saved world).
    r.add_get("/_sim/state", state.list_states)
    r.add_post("/_sim/state", state.save_state)
    r.add_post("/_sim/state/{name}/restore", state.restore_state)
    r.add_delete("/_sim/state/{name}", state.delete_state)
    # The internal cascade trace (design.md 1.5): secret keys of the owner, either environment.
    r.add_get("/_sim/payments/{id}/trace", trace.payment_trace)
    r.add_get("/_sim/payouts/{id}/trace", trace.payout_trace)
    # The provider world (design.md 1.5): the simulated providers' live behaviour and incidents.
    r.add_get("/_sim/providers", providers.list_providers)
    r.add_post("/_sim/providers/reset", providers.reset_providers)
    r.add_get(PROVIDER_PATH, providers.get_provider)
    r.add_patch(PROVIDER_PATH, providers.update_provider)
    r.add_post("/_sim/providers/{id}/incidents", providers.create_incident)
    r.add_delete("/_sim/providers/{id}/incidents", providers.end_incidents)
    r.add_delete("/_sim/providers/{id}/incidents/{incidentId}", providers.end_incident)

    # Namespaces (design.md 1.6): many isolated worlds in one server.
    r.add_get("/_sim/namespaces", namespaces.list_namespaces)
    r.add_put("/_sim/namespaces/{name}", namespaces.create_namespace)
    r.add_get("/_sim/namespaces/{name}", namespaces.get_namespace)
    r.add_delete("/_sim/namespaces/{name}", namespaces.delete_namespace)
    r.add_post("/_sim/namespaces/{name}/extend", namespaces.extend_namespace)
    r.add_get("/_sim/audit", team.read_audit)
    r.add_get("/_sim/team/whoami", team.whoami)
    r.add_get("/_sim/team/tokens", team.list_tokens)
    r.add_post("/_sim/team/tokens", team.create_token)
    r.add_delete("/_sim/team/tokens/{id}", team.revoke_token)
    r.add_get("/_sim/team/owners", team.list_owners)
    r.add_put("/_sim/team/owners/{name}", team.set_owner)

    # Team mode's Prometheus scrape, admin only (simulator/http/metrics.py); 404 otherwise.
    if app[SETTINGS].team:
        r.add_get("/metrics", metrics_endpoint)

    _alias_control_plane(r)


# `reset` is not a provider id: without the pattern /_sim/providers/reset also matches {id}, and
# aiohttp's 405 there (OPTIONS, say) advertised GET and PATCH in `Allow` beside POST.
PROVIDER_PATH = "/_sim/providers/{id:(?!reset$)[^{}/]+}"
# Routes registered with a pattern, by their canonical path (what the alias must register again).
PATTERNED = {"/_sim/providers/{id}": PROVIDER_PATH}


def _alias_control_plane(router: web.UrlDispatcher) -> None:
    """Every JSON route of the control plane again under /api/v1, with the same handler.

    The document places /_sim at the server root with per-path `servers`, which client generators
    ignore: a client made with the API's base URL calls /api/v1/_sim/clock (docs/decisions.md).
    Registered last, so every /_sim route above has its alias; the simulated provider's HTML
    pages are not API and keep their one address."""
    for route in list(router.routes()):
        path = route.resource.canonical if route.resource is not None else ""
        if path.startswith("/_sim/") and not path.startswith("/_sim/provider/"):
            router.add_route(route.method, API_PREFIX + PATTERNED.get(path, path), route.handler)
