"""Typed app keys for the services the composition root wires (one of each per app)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from simulator.clock import SimClock
from simulator.domain.auth import Authenticator, Principal
from simulator.domain.catalog import Catalog
from simulator.domain.checkout.service import CheckoutService
from simulator.domain.context import DomainContext
from simulator.domain.deliveries import DeliveryService
from simulator.domain.deposits.service import DepositService
from simulator.domain.payins.refunds import RefundService
from simulator.domain.payins.service import PaymentService
from simulator.domain.payouts.service import PayoutService
from simulator.domain.ratelimit import RateLimiter
from simulator.domain.requestlog import RequestLog
from simulator.domain.settlements import SettlementService
from simulator.domain.webhooks import WebhookService
from simulator.domain.withdrawals import WithdrawalService
from simulator.events.bus import EventBus
from simulator.events.engine import DeliveryEngine
from simulator.events.stream import EventStream
from simulator.http.idempotency import IdempotencyCache
from simulator.http.rendered import RenderedTransactions
from simulator.http.request_tail import RequestTail
from simulator.openapi.validation import Operations
from simulator.scheduler import Scheduler
from simulator.settings import Settings
from simulator.store import Encoded, Store
from simulator.store.saved import Loaded, SavedStates


class WorldGate(Protocol):
    """What requests see of the one swap of the world at a time (a reset or a restore):
    `simulator.http.reset.ServerReset`, which imports these keys, so it is named by its shape."""

    @property
    def gate_open(self) -> bool: ...

    @property
    def swapping(self) -> bool: ...

    async def wait_for_gate(self) -> None: ...

    async def run(
        self,
        swap: Callable[[web.Application], None] | None = None,
        *,
        refuse_if_swapping: bool = False,
    ) -> None: ...

    async def export(self) -> Encoded: ...

    async def restore(self, loaded: Loaded) -> None: ...


if TYPE_CHECKING:  # it imports nothing of this module
    from simulator.http.metrics import Metrics  # noqa: F401 (named in a type argument below)
    from simulator.worlds import Worlds  # noqa: F401 (named in a type argument below)

SETTINGS = web.AppKey("settings", Settings)
CLOCK = web.AppKey("clock", SimClock)
STORE = web.AppKey("store", Store)
CATALOG = web.AppKey("catalog", Catalog)
SCHEDULER = web.AppKey("scheduler", Scheduler)
BUS = web.AppKey("bus", EventBus)
CONTEXT = web.AppKey("context", DomainContext)
AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
IDEMPOTENCY = web.AppKey("idempotency", IdempotencyCache)
RENDERED = web.AppKey("rendered", RenderedTransactions)

# The domain services, one per resource.
PAYMENTS = web.AppKey("payments", PaymentService)
REFUNDS = web.AppKey("refunds", RefundService)
CHECKOUT = web.AppKey("checkout", CheckoutService)
PAYOUTS = web.AppKey("payouts", PayoutService)
DEPOSITS = web.AppKey("deposits", DepositService)
WEBHOOKS = web.AppKey("webhooks", WebhookService)
DELIVERIES = web.AppKey("webhook_deliveries", DeliveryService)
SETTLEMENTS = web.AppKey("settlements", SettlementService)
WITHDRAWALS = web.AppKey("withdrawals", WithdrawalService)

# The edges that act on the domain's decisions: webhook sends and the live event stream.
ENGINE = web.AppKey("delivery_engine", DeliveryEngine)
STREAM = web.AppKey("event_stream", EventStream)
# The request log (a debugging aid kept in memory, not state) and its live readers.
REQUEST_LOG = web.AppKey("request_log", RequestLog)
# A seeded server's request ids (they are in every error envelope and X-Request-Id), drawn apart
# from the domain's generator so they move none of its values; None: from the OS (every serve).
REQUEST_IDS: web.AppKey[random.Random | None] = web.AppKey("request_ids")
REQUEST_TAIL = web.AppKey("request_tail", RequestTail)

# Set when the server starts stopping (SIGINT/SIGTERM): new requests and requests cut short at
# the end of the grace period answer 503.
STOPPING = web.AppKey("stopping", asyncio.Event)
# The tasks of the requests being handled, with their requests, so a stopping server (and a
# reset) can wait for them.
IN_FLIGHT = web.AppKey[dict["asyncio.Task[Any]", web.Request]]("in_flight")
# POST /_sim/reset: the gate requests wait at while a reset runs (simulator/http/reset.py).
RESET = web.AppKey("reset", WorldGate)
# The OpenAPI document's operations with their compiled request validators.
OPERATIONS = web.AppKey("operations", Operations)
# What each route asks of a request (its credential, its operation), found at its first request
# (simulator/http/middlewares.py).
ROUTE_PLANS = web.AppKey[dict[Any, Any]]("route_plans")
# None when the server runs with --no-rate-limit (the value type is given as the type argument:
# a union is not a class, so it cannot be the `t` argument).
RATE_LIMITER = web.AppKey[RateLimiter | None]("rate_limiter")

# Per-request values set by the middlewares.
REQUEST_ID = web.RequestKey("request_id", str)
PRINCIPAL = web.RequestKey("principal", Principal)
# The JSON body, once the validation middleware has read and checked it against the document.
BODY = web.RequestKey("json_body", dict)
# The body's bytes as they were read (for the request log).
RAW_BODY = web.RequestKey("raw_body", bytes)
# Set when the body, read off the connection before the request was handled, was over the size
# limit: the refusal is answered where the body is parsed, after authentication, as before.
BODY_TOO_LARGE = web.RequestKey("body_too_large", bool)
# Named saved states (/_sim/state): files under <data_dir>/snapshots, or in memory.
SAVED_STATES = web.AppKey("saved_states", SavedStates)
# One save or delete of a saved state at a time ("exists? then write" must not interleave).
SAVED_STATES_LOCK = web.AppKey("saved_states_lock", asyncio.Lock)

# Namespaces (simulator/worlds.py): the world's name (`default` for the front's own), the
# registry of the other worlds, and the prefix the URLs a world hands out carry (`/ns/{name}`;
# "" for `default`), which the front also puts on each request it hands to that world.
NAMESPACE = web.AppKey("namespace", str)
WORLDS = web.AppKey["Worlds"]("worlds")
URL_PREFIX = web.AppKey("url_prefix", str)
REQUEST_URL_PREFIX = web.RequestKey("url_prefix", str)
# Team mode's figures for GET /metrics (simulator/http/metrics.py), one for the server, shared
# by every world; None outside team mode (nothing is counted).
METRICS = web.AppKey["Metrics | None"]("metrics")
