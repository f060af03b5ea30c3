"""Webhooks and the event flows around them: subscriptions and deliveries (/api/v1/webhooks...),
the live event stream (GET /_sim/events) and the control-plane withdrawals that make the
`withdrawal.*` events reachable (POST /_sim/withdrawals). Handlers parse, call the domain, render.
"""

from __future__ import annotations

from aiohttp import web

from simulator.domain.deliveries import DELIVERY_STATUSES, delivery_view
from simulator.domain.errors import ApiError
from simulator.domain.webhooks import subscription_view
from simulator.domain.withdrawals import withdrawal_view
from simulator.http.keys import (
    DELIVERIES,
    ENGINE,
    STORE,
    STREAM,
    WEBHOOKS,
    WITHDRAWALS,
)
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, page_params, query_choice, read_json
from simulator.http.reset import streaming
from simulator.http.responses import json_response, offset_page
from simulator.http.sse import sse_response, write_frames

# -- subscriptions --------------------------------------------------------------------------------


@auth("secret")
async def create_webhook(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        sub, secret = request.app[WEBHOOKS].create(principal_of(request), body)
    return json_response(subscription_view(sub, base_url(request), secret=secret), status=201)


@auth("secret")
async def list_webhooks(request: web.Request) -> web.Response:
    limit, offset = page_params(request)
    rows, total = request.app[WEBHOOKS].page(principal_of(request), limit, offset)
    origin = base_url(request)
    return json_response(
        offset_page([subscription_view(s, origin) for s in rows], total, limit, offset)
    )


@auth("secret")
async def get_webhook(request: web.Request) -> web.Response:
    sub = request.app[WEBHOOKS].get(principal_of(request), request.match_info["id"])
    return json_response(subscription_view(sub, base_url(request)))


@auth("secret")
async def update_webhook(request: web.Request) -> web.Response:
    body = await read_json(request, optional=True)
    with request.app[STORE].batch():
        sub = request.app[WEBHOOKS].update(principal_of(request), request.match_info["id"], body)
    return json_response(subscription_view(sub, base_url(request)))


@auth("secret")
async def delete_webhook(request: web.Request) -> web.Response:
    webhook_id = request.match_info["id"]
    with request.app[STORE].batch():
        request.app[WEBHOOKS].delete(principal_of(request), webhook_id)
    return json_response({"id": webhook_id, "deleted": True})


@auth("secret")
async def rotate_secret(request: web.Request) -> web.Response:
    with request.app[STORE].batch():
        sub, secret = request.app[WEBHOOKS].rotate(principal_of(request), request.match_info["id"])
    return json_response(subscription_view(sub, base_url(request), secret=secret))


@auth("sandbox")
async def set_secret(request: web.Request) -> web.Response:
    """POST /_sim/webhooks/{id}/secret: the control plane's, for `payorch listen` re-making its
    subscription after a reset with the secret its receiver already has."""
    body = await read_json(request)
    with request.app[STORE].batch():
        sub = request.app[WEBHOOKS].set_secret(
            principal_of(request), request.match_info["id"], body.get("secret")
        )
    return json_response(subscription_view(sub, base_url(request)))


# -- deliveries -----------------------------------------------------------------------------------


@auth("secret")
async def list_deliveries(request: web.Request) -> web.Response:
    limit, offset = page_params(request)
    deliveries = request.app[DELIVERIES]
    rows, total = deliveries.page(
        principal_of(request),
        request.match_info["id"],
        limit,
        offset,
        query_choice(request, "status", DELIVERY_STATUSES),
    )
    views = [delivery_view(d, deliveries.event_of(d)) for d in rows]
    return json_response(offset_page(views, total, limit, offset))


@auth("secret")
async def replay_delivery(request: web.Request) -> web.Response:
    principal, webhook_id = principal_of(request), request.match_info["id"]
    deliveries = request.app[DELIVERIES]
    delivery = deliveries.get(principal, webhook_id, request.match_info["deliveryId"])
    if not request.app[WEBHOOKS].get(principal, webhook_id)["active"]:
        raise ApiError(
            "invalid_request",
            f"Webhook {webhook_id} is inactive and receives nothing; PATCH it with "
            '{"active": true} first.',
            param="id",
        )
    # Awaited: the caller asked for this attempt and gets its outcome (bounded by the 10 s
    # attempt timeout); it causes no event, so it delays no state change.
    delivery = await request.app[ENGINE].replay(delivery["id"]) or delivery
    return json_response(delivery_view(delivery, deliveries.event_of(delivery)))


# -- the live event stream (design.md 1.3) --------------------------------------------------------


@streaming
@auth("sandbox")
async def event_stream(request: web.Request) -> web.StreamResponse:
    stream = request.app[STREAM]
    response = sse_response(request)
    await response.prepare(request)
    with stream.subscribe(principal_of(request).scope) as queue:
        await write_frames(
            request,
            response,
            queue,
            keepalive_seconds=stream.keepalive_seconds,
            write_timeout_seconds=stream.write_timeout_seconds,
        )
    return response


# -- control-plane withdrawals --------------------------------------------------------------------


@auth("sandbox")
async def create_withdrawal(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        withdrawal = request.app[WITHDRAWALS].request(principal_of(request), body)
    return json_response({"withdrawal": withdrawal_view(withdrawal)}, status=201)


@auth("sandbox")
async def get_withdrawal(request: web.Request) -> web.Response:
    withdrawal = request.app[WITHDRAWALS].get(principal_of(request), request.match_info["id"])
    return json_response({"withdrawal": withdrawal_view(withdrawal)})
