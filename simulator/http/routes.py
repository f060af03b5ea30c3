"""The one URL table: every path the server answers, with its handler."""

from __future__ import annotations

from aiohttp import web

from simulator.http.handlers import account, meta, payments, sim
from simulator.http.handlers import auth as auth_handlers
from simulator.http.pages import provider

API = "/api/v1"


def setup_routes(app: web.Application, static_dir: str) -> None:
    r = app.router
    r.add_post(f"{API}/auth/token", auth_handlers.issue_token)
    r.add_post(f"{API}/auth/refresh", auth_handlers.refresh_token)
    r.add_get(f"{API}/ping", account.ping)
    r.add_get(f"{API}/me", account.me)
    r.add_get(f"{API}/me/balance", account.balance)
    r.add_get(f"{API}/payment-methods", account.payment_methods)
    # /transactions are the spec's legacy aliases of the pay-in list, get and create.
    for base in ("payments", "transactions"):
        r.add_post(f"{API}/{base}", payments.create_payment)
        r.add_get(f"{API}/{base}", payments.list_payments)
        r.add_get(f"{API}/{base}/{{id}}", payments.get_payment)
    r.add_post(f"{API}/payments/{{id}}/refund", payments.refund_payment)
    r.add_post(f"{API}/payments/{{id}}/simulate", payments.simulate_payment)
    r.add_get(f"{API}/claims/{{id}}", payments.get_claim)
    r.add_get(f"{API}/openapi.json", meta.openapi_document)

    r.add_get("/_sim/clock", sim.get_clock)
    r.add_post("/_sim/clock/advance", sim.advance_clock)
    r.add_get("/_sim/provider/{id}", provider.provider_page)
    r.add_post("/_sim/provider/{id}/{action}", provider.provider_action)
    r.add_static("/static", static_dir, append_version=False)
