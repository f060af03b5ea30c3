"""The simulated upstream provider's hosted page (card forms, bank redirects).

Approve / decline / abandon drive the same transitions and events as the simulate endpoint, then
send the buyer back to the transaction's `returnUrl` (or show the result when there is none).
"""

from __future__ import annotations

from html import escape

from aiohttp import web

from simulator.http.keys import PAYMENTS, STORE

ACTIONS = {"approve": "paid", "decline": "failed", "abandon": "expired"}

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{provider} · payorch simulated provider</title>
<style>
body{{font-family:system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}}
main{{max-width:420px;margin:40px auto;background:#fff;border-radius:12px;padding:24px;
box-shadow:0 2px 12px rgba(0,0,0,.08)}}
h1{{font-size:1.2rem}} .amount{{font-size:2rem;font-weight:600}}
form{{display:inline}} button{{font-size:1rem;padding:10px 16px;margin:6px 6px 0 0;
border-radius:8px;border:1px solid #ccd;cursor:pointer}}
#approve{{background:#1a7f37;color:#fff;border:0}}
#decline{{background:#cf222e;color:#fff;border:0}}
.note{{color:#667;font-size:.85rem}}
</style></head><body><main>
<h1 id="provider-name">{provider}</h1>
<p class="note">Simulated provider page for <span id="transaction-id">{tx_id}</span>
({method})</p>
<p class="amount" id="amount">{amount} {currency}</p>
<p id="status">Status: <strong>{status}</strong></p>
{actions}
</main></body></html>"""


def _actions(tx_id: str, status: str) -> str:
    if status != "pending":
        return '<p class="note" id="done">This payment is no longer pending.</p>'
    buttons = "".join(
        f'<form method="post" action="/_sim/provider/{escape(tx_id)}/{name}">'
        f'<button id="{name}" type="submit">{name.capitalize()}</button></form>'
        for name in ACTIONS
    )
    return f'<div id="actions">{buttons}</div>'


async def provider_page(request: web.Request) -> web.Response:
    tx = request.app[PAYMENTS].ctx.transactions.get(request.match_info["id"])
    if tx is None or tx.get("paymentFormPath") is None:
        return web.Response(status=404, text="Unknown payment.", content_type="text/plain")
    html = _PAGE.format(
        provider=escape(tx["paymentMethodName"]),
        tx_id=escape(tx["id"]),
        method=escape(tx["paymentMethod"]),
        amount=escape(tx["amountLocal"]),
        currency=escape(tx["currencyLocal"]),
        status=escape(tx["status"]),
        actions=_actions(tx["id"], tx["status"]),
    )
    return web.Response(text=html, content_type="text/html")


async def provider_action(request: web.Request) -> web.Response:
    payments = request.app[PAYMENTS]
    tx = payments.ctx.transactions.get(request.match_info["id"])
    action = ACTIONS.get(request.match_info["action"])
    if tx is None or action is None or tx.get("paymentFormPath") is None:
        return web.Response(status=404, text="Unknown payment.", content_type="text/plain")
    if tx["status"] == "pending":
        with request.app[STORE].batch():
            payments.apply(tx, action, simulator=tx["environment"] == "sandbox")
    target = tx.get("returnUrl") or f"/_sim/provider/{tx['id']}"
    raise web.HTTPSeeOther(target)
