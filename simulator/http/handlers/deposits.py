"""Deposit-account routes: /me/deposit-methods, /me/deposit-accounts[/{id}[/deposits]], and the
control plane's POST /_sim/deposits (a customer's transfer into a CLABE, design.md 1.3)."""

from __future__ import annotations

from aiohttp import web

from simulator.domain.deposits.service import account_view, deposit_view
from simulator.domain.errors import invalid_request
from simulator.http.keys import DEPOSITS, PAYMENTS, STORE
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, page_params, read_json
from simulator.http.responses import json_response

INCLUDES = ("stats",)


@auth("secret")
async def list_deposit_methods(request: web.Request) -> web.Response:
    deposits = request.app[DEPOSITS]
    shop = deposits.shop_of(principal_of(request))
    return json_response({"methods": deposits.method_entries(shop)})


@auth("secret")
async def create_account(request: web.Request) -> web.Response:
    body = await read_json(request)
    account, created = await request.app[DEPOSITS].get_or_create(principal_of(request), body)
    return json_response(
        {"created": created, "account": account_view(account)}, status=201 if created else 200
    )


@auth("secret")
async def list_accounts(request: web.Request) -> web.Response:
    deposits = request.app[DEPOSITS]
    principal = principal_of(request)
    deposits.shop_of(principal)  # a merchant-wide credential is refused before anything else
    limit, offset = page_params(request, max_limit=200)
    with_stats = _includes(request)
    rows, total = deposits.list(principal, request.query.get("endUserRef") or None, limit, offset)
    accounts = [account_view(row, deposits.stats(row) if with_stats else None) for row in rows]
    return json_response(
        {"accounts": accounts, "pagination": {"total": total, "limit": limit, "offset": offset}}
    )


@auth("secret")
async def get_account(request: web.Request) -> web.Response:
    deposits = request.app[DEPOSITS]
    account = deposits.get(principal_of(request), request.match_info["id"])
    stats = deposits.stats(account) if _includes(request) else None
    return json_response({"account": account_view(account, stats)})


@auth("secret")
async def list_deposits(request: web.Request) -> web.Response:
    limit, offset = page_params(request, max_limit=200)
    rows, total = request.app[DEPOSITS].deposits(
        principal_of(request), request.match_info["id"], limit, offset
    )
    return json_response(
        {
            "deposits": [deposit_view(row) for row in rows],
            "pagination": {"total": total, "limit": limit, "offset": offset},
        }
    )


@auth("sandbox")
async def simulate_deposit(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        tx, deposit = request.app[DEPOSITS].receive(principal_of(request), body)
    transaction = request.app[PAYMENTS].view(tx, base_url(request))
    return json_response({"transaction": transaction, "deposit": deposit_view(deposit)})


@auth("sandbox")
async def disable_account(request: web.Request) -> web.Response:
    deposits = request.app[DEPOSITS]
    account = deposits.get(principal_of(request), request.match_info["id"])  # 404 if not ours
    return json_response({"account": account_view(deposits.disable(account["id"]))})


def _includes(request: web.Request) -> bool:
    """Whether `include` asks for stats (a comma-separated list; unknown values are refused)."""
    raw = request.query.get("include") or ""
    wanted = {part.strip() for part in raw.split(",") if part.strip()}
    unknown = sorted(wanted - set(INCLUDES))
    if unknown:
        raise invalid_request(
            f"`include` takes {', '.join(INCLUDES)}; unknown: {', '.join(unknown)}.",
            [{"path": "include", "message": f"unknown value {value!r}"} for value in unknown],
            param="include",
        )
    return "stats" in wanted
