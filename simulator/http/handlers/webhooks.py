"""Webhooks and the event flows around them: subscriptions and deliveries (/api/v1/webhooks...),
the live event stream (GET /_sim/events) and the control-plane withdrawals that make the
`withdrawal.*` events reachable (POST /_sim/withdrawals). Handlers parse, call the domain, render.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from simulator.domain.deliveries import (
    DELIVERY_STATUSES,
    RETRY_JOB,
    DeliveryService,
    delivery_view,
)
from simulator.domain.errors import ApiError
from simulator.domain.settlements import SettlementService
from simulator.domain.webhooks import SECRET_EXPIRY_JOB, WebhookService, subscription_view
from simulator.domain.withdrawals import JOB as WITHDRAWAL_JOB
from simulator.domain.withdrawals import WithdrawalService, withdrawal_view
from simulator.events.engine import DeliveryEngine
from simulator.events.stream import EventStream
from simulator.http.keys import BUS, CLOCK, CONTEXT, REQUEST_ID, SCHEDULER, SETTINGS, STORE
from simulator.http.middlewares import auth, principal_of
from simulator.http.requests import base_url, page_params, query_choice, read_json
from simulator.http.responses import REQUEST_ID_HEADER, json_response, offset_page

API = "/api/v1"

WEBHOOKS = web.AppKey("webhooks", WebhookService)
DELIVERIES = web.AppKey("webhook_deliveries", DeliveryService)
ENGINE = web.AppKey("delivery_engine", DeliveryEngine)
STREAM = web.AppKey("event_stream", EventStream)
SETTLEMENTS = web.AppKey("settlements", SettlementService)
WITHDRAWALS = web.AppKey("withdrawals", WithdrawalService)


def setup(app: web.Application) -> None:
    """Create this resource's services on `app` and register its routes."""
    store, ctx, scheduler = app[STORE], app[CONTEXT], app[SCHEDULER]
    events, jobs_table = store.table("events"), store.table("jobs")
    webhooks = WebhookService(store.table("webhooks"), scheduler, ctx.now, ctx.rng)
    deliveries = DeliveryService(
        store.table("webhook_deliveries"), events, webhooks, scheduler, ctx.now, ctx.rng
    )
    engine = DeliveryEngine(
        deliveries,
        app[CLOCK],
        store.batch,
        jobs_table.__contains__,
        loopback_only=app[SETTINGS].webhooks_loopback_only,
    )
    stream = EventStream(events)
    settlements = SettlementService(
        store.table("settlement_days"),
        store.table("settlements"),
        ctx.transactions,
        ctx.catalog,
        scheduler,
        ctx.events,
        ctx.now,
        ctx.rng,
    )
    withdrawals = WithdrawalService(
        store.table("withdrawals"), ctx.ledger, scheduler, ctx.events, ctx.now, ctx.rng
    )
    app[WEBHOOKS], app[DELIVERIES], app[ENGINE] = webhooks, deliveries, engine
    app[STREAM], app[SETTLEMENTS], app[WITHDRAWALS] = stream, settlements, withdrawals

    for listener in (settlements.on_event, engine.on_event, stream.on_event):
        app[BUS].subscribe(listener)
    scheduler.register(RETRY_JOB, engine.on_retry_job)
    scheduler.register(SECRET_EXPIRY_JOB, webhooks.expire_secret)
    scheduler.register(WITHDRAWAL_JOB, withdrawals.settle)
    for kind, handler in settlements.job_handlers().items():
        scheduler.register(kind, handler)
    app.cleanup_ctx.append(engine.lifecycle)
    app.on_shutdown.append(_close_streams)

    r = app.router
    r.add_post(f"{API}/webhooks", create_webhook)
    r.add_get(f"{API}/webhooks", list_webhooks)
    r.add_get(f"{API}/webhooks/{{id}}", get_webhook)
    r.add_patch(f"{API}/webhooks/{{id}}", update_webhook)
    r.add_delete(f"{API}/webhooks/{{id}}", delete_webhook)
    r.add_post(f"{API}/webhooks/{{id}}/rotate-secret", rotate_secret)
    r.add_get(f"{API}/webhooks/{{id}}/deliveries", list_deliveries)
    r.add_post(f"{API}/webhooks/{{id}}/deliveries/{{deliveryId}}/replay", replay_delivery)
    r.add_get("/_sim/events", event_stream)
    r.add_post("/_sim/withdrawals", create_withdrawal)
    r.add_get("/_sim/withdrawals/{id}", get_withdrawal)


async def _close_streams(app: web.Application) -> None:
    app[STREAM].close_all()


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


@auth("sandbox")
async def event_stream(request: web.Request) -> web.StreamResponse:
    stream = request.app[STREAM]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            REQUEST_ID_HEADER: request[REQUEST_ID],
        }
    )
    await response.prepare(request)
    with stream.subscribe(principal_of(request).scope) as queue:
        try:
            await response.write(b"retry: 3000\n: connected\n\n")
            while True:
                try:
                    frame = await asyncio.wait_for(queue.get(), stream.keepalive_seconds)
                except TimeoutError:
                    frame = b": keep-alive\n\n"  # also how a vanished reader is noticed
                if frame is None:  # server shutting down, or this reader fell too far behind
                    break
                await response.write(frame)
        except ConnectionResetError:
            pass  # the reader went away
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
