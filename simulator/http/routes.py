"""The one URL table: every path the server answers, with its handler, written out in full so that
grepping a path lands here. Services are built by the composition root (`simulator/app.py`)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler

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

# `reset` is not a provider id: without the pattern /_sim/providers/reset also matches {id}, and
# aiohttp's 405 there (OPTIONS, say) advertised GET and PATCH in `Allow` beside POST.
PROVIDER_PATH = "/_sim/providers/{id:(?!reset$)[^{}/]+}"
# Routes registered with a pattern, by their canonical path (what the alias must register again).
PATTERNED = {"/_sim/providers/{id}": PROVIDER_PATH}

# One table per family, registered in this order: aiohttp matches the first route that fits.
Route = tuple[str, str, Handler]

ACCOUNT_ROUTES: tuple[Route, ...] = (
    ("POST", "/api/v1/auth/token", auth_handlers.issue_token),
    ("POST", "/api/v1/auth/refresh", auth_handlers.refresh_token),
    ("GET", "/api/v1/ping", account.ping),
    ("GET", "/api/v1/me", account.me),
    ("GET", "/api/v1/me/balance", account.balance),
    ("GET", "/api/v1/payment-methods", account.payment_methods),
)

PAYIN_ROUTES: tuple[Route, ...] = (
    # Pay-ins. /transactions are the spec's legacy aliases of the list, get and create.
    ("POST", "/api/v1/payments", payments.create_payment),
    ("GET", "/api/v1/payments", payments.list_payments),
    ("GET", "/api/v1/payments/{id}", payments.get_payment),
    ("POST", "/api/v1/transactions", payments.create_payment),
    ("GET", "/api/v1/transactions", payments.list_payments),
    ("GET", "/api/v1/transactions/{id}", payments.get_payment),
    ("POST", "/api/v1/payments/{id}/refund", payments.refund_payment),
    ("POST", "/api/v1/payments/{id}/simulate", payments.simulate_payment),
    ("GET", "/api/v1/claims/{id}", payments.get_claim),
    ("GET", "/api/v1/openapi.json", meta.openapi_document),
    ("GET", "/", meta.landing),
)

CONTROL_PLANE_ROUTES: tuple[Route, ...] = (
    ("GET", "/_sim/clock", sim.get_clock),
    ("POST", "/_sim/clock/advance", sim.advance_clock),
    ("POST", "/_sim/reset", sim.reset_server),
    # The request log; /stream before {requestId}, which would take it.
    ("GET", "/_sim/requests", request_log.list_requests),
    ("GET", "/_sim/requests/stream", request_log.request_stream),
    ("GET", "/_sim/requests/{requestId}", request_log.get_request),
    ("GET", "/_sim/coverage", sim.get_coverage),
    ("GET", "/_sim/payment-methods", sim.payment_method_requirements),
    ("GET", "/_sim/provider/{id}", provider.provider_page),
    ("POST", "/_sim/provider/{id}/{action}", provider.provider_action),
)

CHECKOUT_ROUTES: tuple[Route, ...] = (
    # Hosted checkout: the session API, then the buyer's pages.
    ("POST", "/api/v1/checkout/sessions", checkout.create_session),
    ("GET", "/api/v1/checkout/sessions/{token}", checkout.get_session),
    ("POST", "/api/v1/checkout/sessions/{token}/select", checkout.select_method),
    ("GET", "/checkout/{token}", checkout_pages.picker_page),
    ("POST", "/checkout/{token}/select", checkout_pages.select_page),
    ("GET", "/c/{transaction_id}", checkout_pages.transaction_page),
    ("GET", "/c/{transaction_id}/status", checkout_pages.transaction_status),
)

WEBHOOK_ROUTES: tuple[Route, ...] = (
    # Webhook subscriptions and deliveries, the live event stream, control-plane withdrawals.
    ("POST", "/api/v1/webhooks", webhooks.create_webhook),
    ("GET", "/api/v1/webhooks", webhooks.list_webhooks),
    ("GET", "/api/v1/webhooks/{id}", webhooks.get_webhook),
    ("PATCH", "/api/v1/webhooks/{id}", webhooks.update_webhook),
    ("DELETE", "/api/v1/webhooks/{id}", webhooks.delete_webhook),
    ("POST", "/api/v1/webhooks/{id}/rotate-secret", webhooks.rotate_secret),
    ("GET", "/api/v1/webhooks/{id}/deliveries", webhooks.list_deliveries),
    ("POST", "/api/v1/webhooks/{id}/deliveries/{deliveryId}/replay", webhooks.replay_delivery),
    ("GET", "/_sim/events", webhooks.event_stream),
    ("POST", "/_sim/webhooks/{id}/secret", webhooks.set_secret),
    ("POST", "/_sim/withdrawals", webhooks.create_withdrawal),
    ("GET", "/_sim/withdrawals/{id}", webhooks.get_withdrawal),
)

PAYOUT_ROUTES: tuple[Route, ...] = (
    # Payouts: the merchant's payout account, per environment.
    ("GET", "/api/v1/me/payout/methods", payouts.list_methods),
    ("GET", "/api/v1/me/payout/currencies", payouts.list_currencies),
    ("GET", "/api/v1/me/payout/balance", payouts.get_balance),
    ("POST", "/api/v1/me/payout/fund-sandbox", payouts.fund_sandbox),
    ("POST", "/api/v1/me/payout/transfer", payouts.transfer),
    ("GET", "/api/v1/me/payout/swap", payouts.quote_swap),
    ("POST", "/api/v1/me/payout/swap", payouts.swap),
    ("POST", "/api/v1/me/payout/send", payouts.send_payout),
    ("GET", "/api/v1/me/payout/send", payouts.list_payouts),
    ("GET", "/api/v1/me/payout/send/{id}", payouts.get_payout),
    ("POST", "/api/v1/me/payout/send/{id}/simulate", payouts.simulate_payout),
)

DEPOSIT_ROUTES: tuple[Route, ...] = (
    # Deposit accounts (CLABE), and the control plane's incoming transfer.
    ("GET", "/api/v1/me/deposit-methods", deposits.list_deposit_methods),
    ("POST", "/api/v1/me/deposit-accounts", deposits.create_account),
    ("GET", "/api/v1/me/deposit-accounts", deposits.list_accounts),
    ("GET", "/api/v1/me/deposit-accounts/{id}", deposits.get_account),
    ("GET", "/api/v1/me/deposit-accounts/{id}/deposits", deposits.list_deposits),
    ("POST", "/_sim/deposits", deposits.simulate_deposit),
    ("POST", "/_sim/deposit-accounts/{id}/disable", deposits.disable_account),
)

WORLD_ROUTES: tuple[Route, ...] = (
    # Named saved states of the whole server (a restore is a reset to a saved world).
    ("GET", "/_sim/state", state.list_states),
    ("POST", "/_sim/state", state.save_state),
    ("POST", "/_sim/state/{name}/restore", state.restore_state),
    ("DELETE", "/_sim/state/{name}", state.delete_state),
    # The internal cascade trace (design.md 1.5): secret keys of the owner, either environment.
    ("GET", "/_sim/payments/{id}/trace", trace.payment_trace),
    ("GET", "/_sim/payouts/{id}/trace", trace.payout_trace),
    # The provider world (design.md 1.5): the simulated providers' live behaviour and incidents.
    ("GET", "/_sim/providers", providers.list_providers),
    ("POST", "/_sim/providers/reset", providers.reset_providers),
    ("GET", PROVIDER_PATH, providers.get_provider),
    ("PATCH", PROVIDER_PATH, providers.update_provider),
    ("POST", "/_sim/providers/{id}/incidents", providers.create_incident),
    ("DELETE", "/_sim/providers/{id}/incidents", providers.end_incidents),
    ("DELETE", "/_sim/providers/{id}/incidents/{incidentId}", providers.end_incident),
)

NAMESPACE_AND_TEAM_ROUTES: tuple[Route, ...] = (
    # Namespaces (design.md 1.6): many isolated worlds in one server.
    ("GET", "/_sim/namespaces", namespaces.list_namespaces),
    ("PUT", "/_sim/namespaces/{name}", namespaces.create_namespace),
    ("GET", "/_sim/namespaces/{name}", namespaces.get_namespace),
    ("DELETE", "/_sim/namespaces/{name}", namespaces.delete_namespace),
    ("POST", "/_sim/namespaces/{name}/extend", namespaces.extend_namespace),
    ("GET", "/_sim/audit", team.read_audit),
    ("GET", "/_sim/team/whoami", team.whoami),
    ("GET", "/_sim/team/tokens", team.list_tokens),
    ("POST", "/_sim/team/tokens", team.create_token),
    ("DELETE", "/_sim/team/tokens/{id}", team.revoke_token),
    ("GET", "/_sim/team/owners", team.list_owners),
    ("PUT", "/_sim/team/owners/{name}", team.set_owner),
)


def setup_routes(app: web.Application, static_dir: str) -> None:
    r = app.router
    _add(r, ACCOUNT_ROUTES + PAYIN_ROUTES + CONTROL_PLANE_ROUTES)
    _add_static(r, static_dir)
    _add(r, CHECKOUT_ROUTES + WEBHOOK_ROUTES + PAYOUT_ROUTES + DEPOSIT_ROUTES)
    _add(r, WORLD_ROUTES + NAMESPACE_AND_TEAM_ROUTES)
    # Team mode's Prometheus scrape, admin only (simulator/http/metrics.py); 404 otherwise.
    if app[SETTINGS].team:
        r.add_get("/metrics", metrics_endpoint)
    _alias_control_plane(r)


def _add(router: web.UrlDispatcher, routes: tuple[Route, ...]) -> None:
    for method, path, handler in routes:
        if method == "GET":
            # add_get, not add_route: a GET route answers HEAD too.
            router.add_get(path, handler)
        else:
            router.add_route(method, path, handler)


def _add_static(router: web.UrlDispatcher, static_dir: str) -> None:
    router.add_static("/static", static_dir, append_version=False)
    # Browsers ask for /favicon.ico wherever no icon is linked (a JSON document, the status
    # endpoint opened by hand): the pages' icon, rather than a 404 in the console.
    router.add_get("/favicon.ico", meta.favicon(Path(static_dir) / "favicon.svg"))


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
