"""The composition root: one factory builds the app for `serve` and for tests."""

from __future__ import annotations

import asyncio
import random
import secrets
import warnings
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from simulator.clock import SimClock
from simulator.domain.auth import Authenticator
from simulator.domain.catalog import Catalog
from simulator.domain.checkout.service import EXPIRE_JOB as CHECKOUT_EXPIRE_JOB
from simulator.domain.checkout.service import CheckoutService
from simulator.domain.context import DomainContext
from simulator.domain.coverage import Coverage
from simulator.domain.deliveries import RETRY_JOB, DeliveryService
from simulator.domain.deposits.service import DepositService
from simulator.domain.fx import Fx
from simulator.domain.ids import BufferedSystemRandom
from simulator.domain.ledger import Ledger
from simulator.domain.namespaces import (
    DEFAULT,
    PATH_PREFIX,
    refresh_prefix,
    token_prefix,
)
from simulator.domain.payins.refunds import RefundService
from simulator.domain.payins.service import PaymentService
from simulator.domain.payouts.ledger import PayoutLedger
from simulator.domain.payouts.service import CALLBACK_JOB as PAYOUT_CALLBACK_JOB
from simulator.domain.payouts.service import PayoutService
from simulator.domain.providers.callbacks import CallbackLog
from simulator.domain.providers.world import ProviderWorld
from simulator.domain.ratelimit import RateLimiter
from simulator.domain.requestlog import RequestLog
from simulator.domain.settlements import SettlementService
from simulator.domain.trace import TraceLog
from simulator.domain.transactions import TransactionRepository
from simulator.domain.webhooks import SECRET_EXPIRY_JOB, WebhookService
from simulator.domain.withdrawals import JOB as WITHDRAWAL_JOB
from simulator.domain.withdrawals import WithdrawalService
from simulator.events.bus import EventBus
from simulator.events.egress import RESOLVER, ResolverFactory
from simulator.events.engine import DeliveryEngine
from simulator.events.stream import EventStream
from simulator.fixture_loader import load_catalog, static_dir
from simulator.http import keys
from simulator.http.front import FrontApplication
from simulator.http.idempotency import IdempotencyCache
from simulator.http.middlewares import request_middleware
from simulator.http.rendered import RenderedTransactions
from simulator.http.request_tail import RequestTail
from simulator.http.reset import Background, ServerReset
from simulator.http.routes import setup_routes
from simulator.http.server import KEEPALIVE_TIMEOUT
from simulator.http.worker_front import WorkerFront
from simulator.openapi.validation import Operations
from simulator.openapi.validation import compiled as compiled_operations
from simulator.scheduler import Scheduler
from simulator.settings import Settings
from simulator.store import Encoded, Store
from simulator.store.saved import Loaded, SavedStates
from simulator.store.snapshot import compact_bytes
from simulator.team.mode import TeamMode, open_team
from simulator.worlds import Worlds

if TYPE_CHECKING:
    from simulator.http.metrics import Metrics


def _signing_doc() -> dict[str, str]:
    # From the OS's CSPRNG even under a seed: a secret key (it signs access tokens), which no
    # answer shows, so reproducible answers do not need it seeded.
    return {"id": "signing", "secret": secrets.token_hex(32)}


def _meta(store: Store) -> tuple[bytes, float]:
    """The data dir's signing secret (made once) and the persisted clock offset."""
    meta = store.table("meta")
    secret_doc = meta.get("signing")
    if secret_doc is None:
        secret_doc = _signing_doc()
        meta.put("signing", secret_doc)
    clock_doc = meta.get("clock") or {"offsetSeconds": 0.0}
    return bytes.fromhex(secret_doc["secret"]), float(clock_doc["offsetSeconds"])


def create_app(
    settings: Settings,
    *,
    clock: SimClock | None = None,
    store: Store | None = None,
    catalog: Catalog | None = None,
    resolver: ResolverFactory | None = None,
) -> web.Application:
    """The server: the front application, which is the world `default` too, with the registry
    of the other namespaces' worlds (built by `_namespace_world` when first used). `resolver`
    makes the resolver webhook deliveries look names up with (tests; None: aiohttp's own)."""
    catalog = catalog or load_catalog(settings.fixtures_dir)
    if store is None:
        store = _open_store(settings)
    # One worker of several (payorch serve --workers): managing a namespace for a sibling's.
    front = WorkerFront if settings.peers else FrontApplication
    app = front(
        middlewares=[request_middleware],
        client_max_size=settings.body_limit,
        # Request bodies are never inflated: a compressed one is refused (415) before it is
        # read, so a gzip bomb costs nothing, and an encoding aiohttp cannot decode (br without
        # Brotli) still reaches the envelope instead of failing in the HTTP parser.
        # A request head has `header_timeout` seconds; an idle kept-alive connection 75.
        handler_args={
            "auto_decompress": False,
            "header_timeout": settings.header_timeout,
            "keepalive_timeout": KEEPALIVE_TIMEOUT,
            "max_connections": settings.max_connections,
        },
    )
    # Compiled once per process: every world validates requests against the same document.
    operations = compiled_operations()
    app[RESOLVER] = resolver
    app[keys.METRICS] = _metrics(settings)
    _compose(app, settings, store, catalog, operations, asyncio.Event(), clock=clock)
    # One URL table for every world: the front resolves each request with it, then hands it to
    # the request's world (simulator/http/front.py).
    setup_routes(app, str(static_dir()))

    app.on_shutdown.append(_stopping)

    def build_world(name: str, data_dir: Path | None, keyed: Catalog) -> web.Application:
        return _namespace_world(app, name, data_dir, keyed)

    app[keys.WORLDS] = Worlds(
        settings, catalog, build_world, lambda world: world[keys.IN_FLIGHT].keys()
    )
    if (metrics := app[keys.METRICS]) is not None:
        metrics.watch(
            lambda: [
                (world[keys.NAMESPACE], world[keys.SCHEDULER].pending())
                for world in (app, *app[keys.WORLDS].loaded())
            ]
        )
    app[keys.WORLDS].team = team = open_team(settings)
    if team is not None:
        app.on_cleanup.append(lambda _: _close_audit(team))
    app.cleanup_ctx.append(app[keys.WORLDS].lifecycle)
    app.on_cleanup.append(_close_store)
    return app


def _metrics(settings: Settings) -> Metrics | None:
    """Team mode's figures (GET /metrics); prometheus_client is imported only then."""
    if not settings.team:
        return None
    from simulator.http.metrics import Metrics

    return Metrics(settings.admin_token, settings.data_dir)


async def _close_audit(team: TeamMode) -> None:
    team.audit.close()


def _open_store(settings: Settings) -> Store:
    if settings.data_dir:
        return Store.open(settings.data_dir, fsync=settings.fsync)
    return Store.memory()


def _namespace_world(
    front: web.Application, name: str, data_dir: Path | None, catalog: Catalog
) -> web.Application:
    """One more world, composed of the same parts as `default`'s: its own store (in
    `data_dir`), clock, services, request log, streams, saved states and reset; the front's
    compiled operations and stopping flag. It has no routes of its own (the front resolves)."""
    settings = replace(front[keys.SETTINGS], data_dir=data_dir)
    world = web.Application(middlewares=[request_middleware])
    world[RESOLVER] = front[RESOLVER]
    world[keys.METRICS] = front[keys.METRICS]
    store = _open_store(settings)
    _compose(
        world,
        settings,
        store,
        catalog,
        front[keys.OPERATIONS],
        front[keys.STOPPING],
        namespace=name,
        public_url=f"{front[keys.CONTEXT].public_url}{PATH_PREFIX}{name}",
    )
    world[keys.WORLDS] = front[keys.WORLDS]
    # After its background starts (cleanup contexts run first): the jobs that fell due while it
    # was out of memory run before the request that loads it is handled, as after a restart.
    world.on_startup.append(_run_due_jobs)
    world.on_cleanup.append(_close_store)
    world.freeze()
    return world


def _compose(
    app: web.Application,
    settings: Settings,
    store: Store,
    catalog: Catalog,
    operations: Operations,
    stopping: asyncio.Event,
    *,
    clock: SimClock | None = None,
    namespace: str = DEFAULT,
    public_url: str | None = None,
) -> None:
    """Everything one world is, put on `app`: the store and clock, the services (`_build`), the
    request log and live streams, saved states, the reset gate and the background."""
    app[keys.NAMESPACE] = namespace
    app[keys.URL_PREFIX] = "" if namespace == DEFAULT else PATH_PREFIX + namespace
    app[keys.SETTINGS] = settings
    app[keys.CLOCK] = clock or SimClock(_meta(store)[1])
    app[keys.STORE] = store
    app[keys.CATALOG] = catalog
    app[keys.OPERATIONS] = operations
    app[keys.ROUTE_PLANS] = {}
    # What outlives a reset: the request log (emptied by it) and the readers of the live streams.
    app[keys.REQUEST_LOG] = request_log = RequestLog(settings.request_log)
    # Seeded, the same requests get the same request ids (docs/decisions.md, Identifiers); made
    # once per world, not per reset, so one server never hands an id out twice.
    app[keys.REQUEST_IDS] = (
        None
        if settings.seed is None
        else random.Random(
            f"{settings.seed}/requests" + ("" if namespace == DEFAULT else f"/{namespace}")
        )
    )
    stall = settings.stream_stall_timeout
    app[keys.REQUEST_TAIL] = RequestTail(request_log, write_timeout_seconds=stall)
    app[keys.STREAM] = EventStream(store.table("events"), write_timeout_seconds=stall)
    app[keys.SAVED_STATES] = SavedStates(
        settings.data_dir / "snapshots" if settings.data_dir else None
    )
    _build(app, public_url=public_url or f"http://{settings.host}:{settings.port}")
    app[keys.STOPPING] = stopping
    app[keys.IN_FLIGHT] = {}
    background = Background()
    app[keys.RESET] = ServerReset(
        app, background, _reset, export=export_state, restore=restore_state
    )
    app[keys.SAVED_STATES_LOCK] = asyncio.Lock()
    app.on_shutdown.append(_close_streams)
    app.cleanup_ctx.append(background.lifecycle)  # the webhook engine and the scheduler's tick


def _build(app: web.Application, public_url: str) -> None:
    """Everything derived from the store, put on the app: the services with their indexes and
    caches, the scheduler and its jobs' handlers, the bus and its listeners. Run at start, and
    again by a reset (on an emptied store)."""
    store = app[keys.STORE]
    signing_secret, _ = _meta(store)
    ctx, scheduler, bus = _domain_context(app, _id_random(app), public_url)
    payments = _wire_payins(app, ctx, scheduler, signing_secret)
    app[keys.SCHEDULER] = scheduler
    app[keys.BUS] = bus
    app[keys.CONTEXT] = ctx
    _wire_request_services(app, signing_secret)
    _wire_checkout(app, ctx, payments, store, scheduler)
    _wire_event_flows(app, ctx, store, scheduler, bus)
    _wire_payouts_and_deposits(app, ctx, payments, store, scheduler)


def _id_random(app: web.Application) -> random.Random:
    """Unseeded (every `serve`), ids come from the OS's CSPRNG: `/c/<transaction_id>` and the
    provider page are public, so ids must not be predictable from the ones a buyer has seen.
    A fixed seed (tests) makes them reproducible; mixing in what is already stored keeps a
    restarted seeded server from minting the ids it minted before."""
    seed, store = app[keys.SETTINGS].seed, app[keys.STORE]
    if seed is None:
        return BufferedSystemRandom()
    return random.Random(
        f"{seed}/{len(store.table('events'))}/{len(store.table('transactions'))}"
        # Another namespace mixes in its name: two seeded worlds draw different ids.
        + ("" if app[keys.NAMESPACE] == DEFAULT else f"/{app[keys.NAMESPACE]}")
    )


def _domain_context(
    app: web.Application, rng: random.Random, public_url: str
) -> tuple[DomainContext, Scheduler, EventBus]:
    """The world's shared parts (repositories, ledger, provider world, scheduler, bus), each
    following its table's rollback, in the one context every service is built from."""
    settings, store, catalog, clock = (
        app[keys.SETTINGS],
        app[keys.STORE],
        app[keys.CATALOG],
        app[keys.CLOCK],
    )
    scheduler = Scheduler(clock, store.table("jobs"), store.batch)
    transactions = TransactionRepository(store.table("transactions"))
    store.table("transactions").on_rollback(transactions.reindex)
    bus = EventBus(store.table("events"), clock.timestamp, rng)
    ledger = Ledger(store.table("movements"), clock.timestamp, rng)
    store.table("movements").on_rollback(ledger.follow_rollback)
    providers = ProviderWorld(
        catalog.providers.values(), store.table("providers"), clock.timestamp, rng
    )
    store.table("providers").on_rollback(providers.forget_write)
    callbacks = CallbackLog(store.table("provider_callbacks"), clock.timestamp)
    store.table("provider_callbacks").on_rollback(callbacks.forget_write)
    ctx = DomainContext(
        catalog=catalog,
        fx=Fx(catalog.fx),
        transactions=transactions,
        claims=store.table("claims"),
        ledger=ledger,
        jobs=scheduler,
        events=bus,
        now=clock.timestamp,
        trace=TraceLog(store.table("traces"), clock.timestamp, limit=settings.trace_limit),
        providers=providers,
        callbacks=callbacks,
        rng=rng,
        public_url=public_url,
        coverage=Coverage(clock.timestamp()),
    )
    bus.subscribe(ctx.coverage.on_event)
    return ctx, scheduler, bus


def _wire_payins(
    app: web.Application, ctx: DomainContext, scheduler: Scheduler, signing_secret: bytes
) -> PaymentService:
    refunds = RefundService(ctx)
    payments = PaymentService(ctx, refunds)
    for kind, handler in payments.job_handlers().items():
        scheduler.register(kind, handler)
    scheduler.register("claim.resolve", lambda payload: refunds.resolve(payload["claimId"]))
    app[keys.PAYMENTS] = payments
    app[keys.REFUNDS] = refunds
    return payments


def _wire_request_services(app: web.Application, signing_secret: bytes) -> None:
    """What the middleware consults on every request: credentials, idempotency, the rendered
    transactions' cache, the rate limit."""
    settings, store, clock, rng = (
        app[keys.SETTINGS],
        app[keys.STORE],
        app[keys.CLOCK],
        app[keys.CONTEXT].rng,
    )
    app[keys.AUTHENTICATOR] = Authenticator(
        app[keys.CATALOG],
        signing_secret,
        store.table("refresh_tokens"),
        rng,
        token_prefix=token_prefix(app[keys.NAMESPACE]),
        refresh_prefix=refresh_prefix(app[keys.NAMESPACE]),
    )
    app[keys.IDEMPOTENCY] = IdempotencyCache(store.table("idempotency"), clock)
    app[keys.RENDERED] = RenderedTransactions(store.table("transactions").raw, clock.timestamp)
    app[keys.RATE_LIMITER] = RateLimiter() if settings.rate_limit else None


def _wire_payouts_and_deposits(
    app: web.Application,
    ctx: DomainContext,
    payments: PaymentService,
    store: Store,
    scheduler: Scheduler,
) -> None:
    app[keys.PAYOUTS] = PayoutService(
        ctx,
        PayoutLedger(store.table("payout_movements"), ctx.rng),
        store.table("payouts"),
    )
    store.table("payouts").on_rollback(app[keys.PAYOUTS].follow_rollback)
    scheduler.register(PAYOUT_CALLBACK_JOB, app[keys.PAYOUTS].callback_job)
    app[keys.DEPOSITS] = DepositService(
        ctx,
        payments,
        store.table("deposit_accounts"),
        store.table("deposits"),
    )


def _reset(app: web.Application) -> None:
    """POST /_sim/reset's swap, run by `ServerReset` once nothing else runs: the store back to a
    fresh data dir's in one atomic rewrite (a new signing secret: access tokens issued before no
    longer verify), the clock to real time, the request log emptied, and the world built again."""
    public_url = app[keys.CONTEXT].public_url
    app[keys.STORE].replace({"meta": {"signing": _signing_doc()}})
    app[keys.CLOCK].reset()
    app[keys.REQUEST_LOG].clear()
    # aiohttp warns that changing a started app's state is deprecated: the values of a frozen
    # app could be cached by what runs on it. Here nothing caches them (handlers, middleware and
    # the background read app[KEY] when they run), so the next request sees the new services.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _build(app, public_url)


def export_state(app: web.Application) -> Encoded:
    """The whole store as a saved state holds it: every table (whoever added it), with the
    clock's offset written into `meta` so that the copy and a restart of it agree on the time.
    Synchronous: run while no request is half-way through (`ServerReset.quiesced`)."""
    store = app[keys.STORE]
    with store.batch():
        app[keys.CONTEXT].providers.flush_counts()
    data = store.export()
    data.setdefault("meta", {})["clock"] = compact_bytes(
        {"id": "clock", "offsetSeconds": app[keys.CLOCK].offset_seconds}
    )
    return data


def restore_state(app: web.Application, loaded: Loaded) -> None:
    """A restore's swap, run by `ServerReset` like a reset's: the store rewritten to the saved
    documents in one atomic rewrite, the clock to the saved offset, the world built again.
    The running server's signing secret is kept (access tokens a client holds still verify;
    refresh tokens are documents and follow the saved state), and the request log too."""
    store = app[keys.STORE]
    data = loaded.data
    snapshot: bytes | None = loaded.snapshot
    signing = store.table("meta").raw("signing")
    meta = data.setdefault("meta", {})
    if signing is not None and meta.get("signing") != signing:
        # Saved before a reset (or in another data dir): the documents differ from the file's.
        meta["signing"] = signing
        snapshot = None
    offset = loaded.state.offset_seconds
    public_url = app[keys.CONTEXT].public_url
    # The saved `meta.clock` already holds the offset (export_state): a restart agrees.
    store.replace_encoded(data, snapshot)
    app[keys.CLOCK].restore(offset)
    with warnings.catch_warnings():  # see _reset
        warnings.simplefilter("ignore", DeprecationWarning)
        _build(app, public_url)


def _wire_checkout(
    app: web.Application,
    ctx: DomainContext,
    payments: PaymentService,
    store: Store,
    scheduler: Scheduler,
) -> None:
    checkout = CheckoutService(ctx, payments, store.table("checkout_sessions"))
    app[keys.CHECKOUT] = checkout
    scheduler.register(CHECKOUT_EXPIRE_JOB, lambda payload: checkout.expire(payload["token"]))


def _wire_event_flows(
    app: web.Application, ctx: DomainContext, store: Store, scheduler: Scheduler, bus: EventBus
) -> None:
    """Webhook subscriptions and deliveries, the live event stream, settlements and withdrawals:
    everything that follows the bus's events or emits the merchant-level ones."""
    events = store.table("events")
    webhooks = WebhookService(store.table("webhooks"), scheduler, ctx.now, ctx.rng)
    deliveries = DeliveryService(
        store.table("webhook_deliveries"),
        events,
        webhooks,
        scheduler,
        ctx.now,
        ctx.rng,
        trace=ctx.trace,
    )
    engine = DeliveryEngine(
        deliveries,
        app[keys.CLOCK],
        store.batch,
        store.table("jobs").__contains__,
        loopback_only=app[keys.SETTINGS].webhooks_loopback_only,
        namespace=None if app[keys.NAMESPACE] == DEFAULT else app[keys.NAMESPACE],
        egress=app[keys.SETTINGS].egress,
        resolver=app[RESOLVER],
        observe=None
        if (metrics := app[keys.METRICS]) is None
        else partial(metrics.delivery, app[keys.NAMESPACE]),
    )
    stream = app[keys.STREAM]
    settlements = SettlementService(
        store.table("settlement_days"),
        store.table("settlement_entries"),
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
    app[keys.WEBHOOKS], app[keys.DELIVERIES], app[keys.ENGINE] = webhooks, deliveries, engine
    app[keys.SETTLEMENTS] = settlements
    store.table("settlement_entries").on_rollback(settlements.follow_rollback)
    app[keys.WITHDRAWALS] = withdrawals

    for listener in (ctx.trace.on_event, settlements.on_event, engine.on_event, stream.on_event):
        bus.subscribe(listener)
    scheduler.register(RETRY_JOB, engine.on_retry_job)
    scheduler.register(SECRET_EXPIRY_JOB, webhooks.expire_secret)
    scheduler.register(WITHDRAWAL_JOB, withdrawals.settle)
    for kind, handler in settlements.job_handlers().items():
        scheduler.register(kind, handler)


async def _run_due_jobs(app: web.Application) -> None:
    await app[keys.SCHEDULER].run_due()


async def _close_streams(app: web.Application) -> None:
    app[keys.STREAM].close_all()
    app[keys.REQUEST_TAIL].close_all()


async def _stopping(app: web.Application) -> None:
    app[keys.STOPPING].set()


async def _close_store(app: web.Application) -> None:
    store = app[keys.STORE]
    with store.batch():
        app[keys.CONTEXT].providers.flush_counts()
    store.table("meta").put(
        "clock", {"id": "clock", "offsetSeconds": app[keys.CLOCK].offset_seconds}
    )
    store.close()
