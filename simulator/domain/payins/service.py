"""Pay-ins: creation through the cascade, reads, and every state transition with its events."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from simulator.clock import isoformat
from simulator.domain.auth import Principal
from simulator.domain.cascade import Routed, cascade_exhausted, route
from simulator.domain.catalog import Environment, PaymentMethod, Provider, Shop
from simulator.domain.context import DomainContext
from simulator.domain.countries import normalize_country
from simulator.domain.errors import ApiError
from simulator.domain.fx import Conversion
from simulator.domain.ids import new_id
from simulator.domain.ledger import AVAILABLE, RESERVE
from simulator.domain.money import dec
from simulator.domain.payins.record import Arrival, new_record, transfer_arrival
from simulator.domain.payins.refunds import RefundService
from simulator.domain.payins.request import PaymentRequest
from simulator.domain.payins.rules import (
    check_amount,
    check_buyer,
    check_cap,
    check_limits,
    resolve_method,
)
from simulator.domain.providers.callbacks import Callback, CallbackVerdict, judge
from simulator.domain.providers.links import form_link
from simulator.domain.providers.world import DUPLICATE_CALLBACK_GAP, CallbackPlan
from simulator.domain.rails import RAILS, Charge
from simulator.domain.states import (
    SANDBOX_SIMULATE_VALUES,
    SIMULATE_ACTIONS,
    Transition,
    check_simulate,
)
from simulator.domain.trace import trace_view
from simulator.domain.transactions import TransactionFilters
from simulator.domain.views import created_view, transaction_view

if TYPE_CHECKING:
    from simulator.domain.records import ClaimRecord, TransactionRecord

DAY = 86_400.0
RECONCILE_EVERY = 300.0
SIMULATED_CALLBACK_DELAY = 3.0
PLACEHOLDER_EXPIRY = 1800.0
# The field a closing transition stamps, by the status it closes the pay-in as.
CLOSED_AT: dict[str, Literal["failedAt", "expiredAt"]] = {
    "failed": "failedAt",
    "expired": "expiredAt",
}


# What a payment request charges, checked: the method, the buyer's country, the amount. A plain
# tuple, returned and unpacked once per payment (a NamedTuple built by keyword is a Python call).
Charged = tuple[PaymentMethod, str, Conversion]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a transition did: the record after it and the events it fired, in order."""

    transaction: TransactionRecord
    events: tuple[str, ...]


class PaymentService:
    def __init__(self, ctx: DomainContext, refunds: RefundService) -> None:
        self.ctx = ctx
        self.refunds = refunds
        self.emit = ctx.emitter
        # What each transition of the table does besides moving the status and firing its
        # events; a claim it opens is returned, for the table's `claim.*` events.
        self.effects: dict[str, Callable[[TransactionRecord, str], ClaimRecord | None]] = {
            "paid": self._complete,
            "failed": self._close,
            "expired": self._close,
            "refunded": lambda tx, _status: self.refunds.record_provider_refund(tx),
            "chargeback": lambda tx, _status: self.refunds.open_chargeback(tx),
        }

    # -- creation ------------------------------------------------------------------------------

    def check_amount(self, method: PaymentMethod, amount: Decimal, currency: str) -> Conversion:
        """`payins.rules.check_amount` on this world's FX rates (the checkout grid's)."""
        return check_amount(self.ctx.fx, method, amount, currency)

    def create(
        self,
        principal: Principal,
        shop: Shop,
        request: PaymentRequest,
        *,
        simulate: str | None = None,
        request_ip: str | None = None,
    ) -> TransactionRecord:
        ctx = self.ctx
        if simulate is not None:
            _check_simulate_header(principal, simulate)
        if request.merchant_id is not None and request.merchant_id != principal.merchant.id:
            raise ApiError(
                "forbidden", "merchantId is not the credential's merchant.", param="merchantId"
            )
        charged = self._charged(principal, shop, request)
        method = charged[0]
        enabled = method.sandbox_only or method.id in shop.enabled_method_ids
        environment = principal.environment
        if environment == "production" and not method.routable:
            raise cascade_exhausted(method.id, enabled_for_shop=enabled)
        routed = route(method, ctx.catalog.providers, environment, enabled, ctx.providers)
        tx = self._new_charge(
            principal, shop, request, charged, routed, simulate=simulate, request_ip=request_ip
        )
        if len(routed.attempts) > 1:
            # The trace's routing entries come from the payment (`trace_view`): kept on it, the
            # detour costs no write of its own.
            tx["cascadeAttempts"] = [(a.provider, a.outcome) for a in routed.attempts]
        ctx.transactions.add(tx)
        ctx.coverage.reach("transaction.create", tx)
        self._schedule_outcomes(tx, routed.callback, environment)
        # The providers' counts join the payment's commit (a refused charge's are written by the
        # handler, after its batch is rolled back).
        ctx.providers.flush()
        return tx

    def _charged(self, principal: Principal, shop: Shop, request: PaymentRequest) -> Charged:
        """The method a request charges, the buyer's country and the amount converted, each
        checked (currency, method, cap, the method's limits, the buyer data it needs)."""
        ctx = self.ctx
        fx, amount = ctx.fx, request.amount
        if request.currency:
            currency = fx.check_currency(request.currency)
            fx.rate(currency)  # fx_unavailable before anything else is looked up
        else:
            currency = "USD"  # the default: well formed, and every world has its rate
        fx.check_precision(amount, currency)
        country = normalize_country(request.country) if request.country else None
        method = resolve_method(ctx.catalog, principal, shop, request, country)
        if country is None:
            country = method.country_iso3
        headline = fx.to_usd_headline(amount, currency)
        check_cap(headline)
        conversion = fx.convert(amount, currency, method.local_currency, headline)
        check_limits(method, conversion.amount_usd, conversion.amount_local)
        check_buyer(request, method, country)
        return method, country, conversion

    def _new_charge(
        self,
        principal: Principal,
        shop: Shop,
        request: PaymentRequest,
        charged: Charged,
        routed: Routed,
        *,
        simulate: str | None,
        request_ip: str | None,
    ) -> TransactionRecord:
        """The record of a routed charge: its page or its instructions, and what was asked."""
        ctx = self.ctx
        method, country, conversion = charged
        now = ctx.now()
        tx_id = new_id(ctx.rng, "TXN-")
        due_at = now + method.due_hours * 3600
        form_path = token = None
        if method.flow == "hosted":
            form_path, token = form_link(tx_id, principal.environment, ctx.rng)
            payment_data = {"method": method.method}
        else:
            amount_local = conversion.amount_local
            payment_data = self._instructions(method, routed.provider, amount_local, tx_id, due_at)
        hosted_checkout, return_url = request.hosted_checkout, request.return_url
        arrival: Arrival = {
            "paymentFormPath": form_path,
            "paymentData": payment_data,
            "hostedCheckout": hosted_checkout,
            "returnUrl": return_url,
            "checkoutPath": checkout_path(tx_id, return_url, token) if hosted_checkout else None,
            "merchantOrderId": request.merchant_order_id,
            "tags": list(request.tags),
            "userName": request.user_name,
            "userEmail": request.user_email,
            "userPhone": request.user_phone,
            "userIp": request.user_ip or request_ip,
            "providerId": routed.provider.id,
            "simulate": simulate,
            "dueAt": due_at,
            "expiresAt": now + PLACEHOLDER_EXPIRY,
        }
        return new_record(
            tx_id,
            principal.merchant,
            shop,
            principal.environment,
            method,
            conversion,
            country,
            now,
            arrival,
            token,
        )

    def trace_view(self, tx: TransactionRecord) -> dict[str, Any]:
        """The payment's trace as the control plane shows it. Its creation entries (what was
        asked, each provider the cascade tried and what it answered, the one that took the
        charge) say nothing the payment record does not, so they are derived from it, never
        written: no trace write on POST /payments. A trace whose first entry is `created` was
        written whole (a deposit)."""
        doc = self.ctx.trace.find(tx["id"])
        if doc is not None and doc["entries"] and doc["entries"][0]["kind"] == "created":
            return trace_view(tx, doc)
        at, provider = tx["createdAt"], tx.get("providerId") or "sandbox"
        first: list[dict[str, Any]] = [{"at": at, "kind": "created", **_created_fields(tx)}]
        if tx["environment"] == "sandbox":
            reason = "sandbox always accepts"
            first.append(
                {"at": at, "kind": "provider_chosen", "provider": provider, "reason": reason}
            )
        elif tx.get("providerId"):  # a payment of the cascade (a deposit records its own entries)
            for tried, said in tx.get("cascadeAttempts") or [(provider, "accepted")]:
                outcome, _, reason = said.partition(":")
                attempt = {
                    "at": at,
                    "kind": "routing_attempt",
                    "provider": tried,
                    "outcome": outcome,
                }
                if reason:
                    attempt["reason"] = reason
                first.append(attempt)
            first.append({"at": at, "kind": "provider_chosen", "provider": provider})
        return trace_view(tx, doc, first=first)

    def record_deposit(
        self,
        shop: Shop,
        environment: Environment,
        method: PaymentMethod,
        amount: Decimal,
        *,
        currency: str,
        user_name: str | None,
        user_email: str | None,
        payment_data: dict[str, Any],
    ) -> TransactionRecord:
        """A transfer received into a fixed deposit account (CLABE): a pay-in that arrives paid.

        Priced and settled as a charge on `method` (the rail the deposit method runs on), with
        `amount` in `currency` as the presentment amount, and completed at once: balance, fees,
        settlement delay and `payment.completed` are the pay-in's own."""
        ctx = self.ctx
        merchant = ctx.catalog.merchants[shop.merchant_id]
        conversion = ctx.fx.convert(amount, currency, currency)
        now = ctx.now()
        tx = new_record(
            new_id(ctx.rng, "TXN-"),
            merchant,
            shop,
            environment,
            method,
            conversion,
            country=method.country_iso3,
            now=now,
            arrival=transfer_arrival(
                now,
                payment_data,
                user_name=user_name,
                user_email=user_email,
                provider_id=method.provider_ids[0] if method.provider_ids else None,
            ),
        )
        ctx.transactions.add(tx)
        ctx.trace.record(tx, "created", **_created_fields(tx), source="deposit")
        self.apply(tx, "paid", simulator=False, cause="deposit")
        return tx

    def _instructions(
        self,
        method: PaymentMethod,
        provider: Provider,
        amount_local: Decimal,
        tx_id: str,
        due_at: float,
    ) -> dict[str, Any]:
        rail = RAILS[method.method]
        # By position, in the NamedTuple's order (five keywords: ~2,400 instructions a payment).
        charge = Charge(self.ctx.rng, tx_id, amount_local, due_at, provider.beneficiary_name)
        data: dict[str, Any] = {"method": method.method, **rail.build(charge)}
        if rail.shows_bank and provider.bank_name:
            data["bankName"] = provider.bank_name
        if rail.shows_beneficiary and provider.beneficiary_name:
            data["beneficiaryName"] = provider.beneficiary_name
        data["dueDate"] = isoformat(due_at)
        data["methodName"] = method.name
        return data

    def _schedule_outcomes(
        self, tx: TransactionRecord, callback: CallbackPlan | None, environment: str
    ) -> None:
        jobs, created, tx_id = self.ctx.jobs, tx["createdAt"], tx["id"]
        jobs.schedule("payment.deadline", tx["dueAt"], {"transactionId": tx_id})
        simulate = tx["simulate"]
        if environment == "sandbox":
            if simulate == "slow_payment":
                # The poll's next run after creation confirms what no callback will (design.md
                # 2.2): its first run is computed only for the payments it will answer.
                jobs.schedule(
                    "payment.reconcile",
                    next_poll(created),
                    {"transactionId": tx_id, "outcome": "paid"},
                )
            elif simulate is not None:
                jobs.schedule(
                    "payment.simulated",
                    created + SIMULATED_CALLBACK_DELAY,
                    {"transactionId": tx_id, "action": simulate},
                )
            return
        if callback is None:
            return
        if callback.after_seconds is None:
            jobs.schedule(
                "payment.reconcile",
                next_poll(created),
                {"transactionId": tx_id, "outcome": callback.outcome},
            )
            return
        at = created + callback.after_seconds
        payload = {
            "transactionId": tx_id,
            "outcome": callback.outcome,
            "providerId": tx["providerId"],
        }
        jobs.schedule("payment.provider_callback", at, payload)  # delivery 1 (`accept_callback`)
        if callback.mode == "duplicate":
            second = {**payload, "delivery": 2}
            jobs.schedule("payment.provider_callback", at + DUPLICATE_CALLBACK_GAP, second)

    # -- reads -----------------------------------------------------------------------------------

    def get(self, principal: Principal, transaction_id: str) -> TransactionRecord:
        return self.ctx.transactions.visible(principal, transaction_id)

    def list_ids(
        self, principal: Principal, filters: TransactionFilters, limit: int, offset: int
    ) -> tuple[list[str], int]:
        """One page of the caller's transactions as ids (to render from stored versions)."""
        return self.ctx.transactions.page_ids(principal.scope, filters, limit, offset)

    def view(
        self, tx: TransactionRecord, base_url: str | None = None, *, on_create: bool = False
    ) -> dict[str, Any]:
        ctx = self.ctx
        if on_create:
            return created_view(tx, base_url or ctx.public_url, ctx.now())
        return transaction_view(tx, base_url or ctx.public_url, ctx.now())

    # -- transitions -----------------------------------------------------------------------------

    def simulate(self, principal: Principal, transaction_id: str, action: object) -> Outcome:
        tx = self.get(principal, transaction_id)
        transition = check_simulate(action, tx["status"], tx["id"])
        self.ctx.trace.record(tx, "simulate", action=action)
        return self._run(tx, str(action), transition, simulator=True, cause="simulate")

    def apply(
        self, tx: TransactionRecord, action: str, *, simulator: bool, cause: str | None = None
    ) -> Outcome:
        """One transition by action name, as the table says; `simulator` marks sandbox-simulator
        -driven moves (they fire the simulator's events, a provider's callback fires its own).
        `cause` names what moved it, for the trace (default: the action)."""
        return self._run(
            tx, action, SIMULATE_ACTIONS[action], simulator=simulator, cause=cause or action
        )

    def _run(
        self,
        tx: TransactionRecord,
        action: str,
        transition: Transition,
        *,
        simulator: bool,
        cause: str,
    ) -> Outcome:
        before = tx["status"]
        claim = self.effects[action](tx, transition.becomes)
        if tx["status"] != transition.becomes:
            # The effects above and the table disagree: a programming error, never input's.
            raise RuntimeError(f"{action} left {tx['id']} {tx['status']}, not {transition.becomes}")
        self.ctx.coverage.reach(
            _coverage_key(action, simulator=simulator, callback=cause in LATER_OUTCOMES), tx
        )
        if before != tx["status"]:
            self.ctx.trace.status_changed(tx, before, cause)
        elif claim is not None:  # a chargeback: the status stays, a claim opens
            self.ctx.trace.record(tx, "chargeback", claimId=claim["id"], cause=cause)
        events = transition.events_for(simulator=simulator)
        at = self.ctx.now()
        for event in events:
            self.emit.about(event, tx, claim, at=at)
        return Outcome(tx, events)

    def _complete(self, tx: TransactionRecord, status: str) -> None:
        ctx = self.ctx
        now = ctx.now()
        merchant = ctx.catalog.merchants[tx["merchantId"]]
        available_at = now + merchant.settlement_delay_days * DAY
        release_at = available_at + merchant.reserve_days * DAY
        tx.update(
            {"status": status, "completedAt": now, "updatedAt": now, "availableAt": available_at}
        )
        ctx.transactions.save(tx)
        scope = (tx["merchantId"], tx["environment"])
        fees = tx["fees"]
        gross, reserve = dec(tx["amount"]), dec(tx["reserve"])
        platform = dec(fees["platform"])
        processing = dec(fees["provider"]) + dec(fees["network"])
        # Every movement below is this payment's, recorded at `now`.
        record = partial(ctx.ledger.record, now=now, transaction_id=tx["id"])
        record(scope, "payment", gross, AVAILABLE, effective_at=available_at)
        if platform:
            record(scope, "fee_platform", -platform, AVAILABLE, effective_at=available_at)
        if processing:
            record(scope, "fee_processing", -processing, AVAILABLE, effective_at=available_at)
        if reserve:
            record(scope, "reserve_hold", -reserve, AVAILABLE, effective_at=available_at)
            record(scope, "reserve_hold", reserve, RESERVE, effective_at=available_at)
            record(scope, "reserve_release", -reserve, RESERVE, effective_at=release_at)
            record(scope, "reserve_release", reserve, AVAILABLE, effective_at=release_at)

    def _close(self, tx: TransactionRecord, status: str) -> None:
        now = self.ctx.now()
        tx.update({"status": status, "updatedAt": now})
        tx[CLOSED_AT[status]] = now
        self.ctx.transactions.save(tx)

    # -- scheduled jobs ------------------------------------------------------------------------

    def on_job(
        self, payload: dict[str, Any], *, action_key: str, simulator: bool, source: str
    ) -> None:
        """The sandbox's scheduled outcome (`source` "Sandbox-Simulate") or the reconciliation
        poll's answer ("reconciliation_poll") about a payment (a production provider's callback
        is `accept_callback`'s). An answer the payment's status no longer admits is ignored, and
        the trace says so."""
        tx = self.ctx.transactions.get(payload["transactionId"])
        if tx is None:
            return
        action = payload[action_key]
        status = tx["status"]
        applies = status == "pending" or (
            action == "chargeback" and status == "completed" and not tx.get("chargebackClaimId")
        )
        self._trace_answer(tx, action, source, applies=applies)
        if not applies:
            return
        if action == "chargeback":
            if tx["status"] == "pending":
                self.apply(tx, "paid", simulator=simulator, cause=source)
            if tx["status"] == "completed" and not tx.get("chargebackClaimId"):
                self.apply(tx, "chargeback", simulator=simulator, cause=source)
            return
        self.apply(tx, action, simulator=simulator, cause=source)

    def _trace_answer(
        self, tx: TransactionRecord, answer: str, source: str, *, applies: bool
    ) -> None:
        trace, provider = self.ctx.trace, tx.get("providerId") or "sandbox"
        if source == "reconciliation_poll":
            result = "applied" if applies else "no_change"
            trace.record(tx, "poll", provider=provider, answer=answer, result=result)
        elif applies:
            trace.record(tx, "callback_received", provider=provider, outcome=answer, source=source)
        else:
            reason = f"late: the payment is already {tx['status']}"
            trace.record(tx, "callback_ignored", provider=provider, outcome=answer, reason=reason)

    def accept_callback(self, payload: dict[str, Any]) -> CallbackVerdict:
        """A provider's callback about a production pay-in: applied when the pay-in is pending,
        else ignored (a duplicate, or late: it already expired or failed) and nothing changes.
        Every callback is recorded with its verdict (ctx.callbacks) and counted."""
        tx = self.ctx.transactions.get(payload["transactionId"])
        outcome = payload["outcome"]
        callback = Callback(
            "payment",
            payload["transactionId"],
            payload.get("providerId") or (tx["providerId"] if tx else None),
            outcome,
            int(payload.get("delivery", 1)),
        )
        before = tx["status"] if tx is not None else None
        verdict = judge(before, awaiting="pending", reports=SIMULATE_ACTIONS[outcome].becomes)
        if tx is not None and verdict.applied:
            callback.trace_received(self.ctx, tx)
            self.apply(tx, outcome, simulator=False, cause="provider_callback")
        callback.close(self.ctx, tx, verdict, before)
        return verdict

    def _callback_job(self, payload: dict[str, Any]) -> None:
        self.accept_callback(payload)

    def job_handlers(self) -> dict[str, Any]:
        def deadline(payload: dict[str, Any]) -> None:
            tx = self.ctx.transactions.get(payload["transactionId"])
            if tx is not None and tx["status"] == "pending":
                self.apply(tx, "expired", simulator=False, cause="deadline")

        return {
            "payment.deadline": deadline,
            "payment.simulated": lambda p: self.on_job(
                p, action_key="action", simulator=True, source="Sandbox-Simulate"
            ),
            "payment.provider_callback": self._callback_job,
            "payment.reconcile": lambda p: self.on_job(
                p, action_key="outcome", simulator=False, source="reconciliation_poll"
            ),
        }


# What moves a payment as a provider's later answer would (coverage's provider-confirmation row).
LATER_OUTCOMES = frozenset({"Sandbox-Simulate", "reconciliation_poll", "provider_callback"})


def _coverage_key(action: str, *, simulator: bool, callback: bool) -> str:
    """The coverage row of a pay-in transition (simulator/domain/coverage.py). A provider's move
    (its callback, the poll, its page in production, a deposit) or one that arrives later as
    theirs would (Sandbox-Simulate's stand-in) is the provider-confirmation row; the deadline's
    expiry its own; the rest (simulate endpoint, sandbox provider page) the simulate rows."""
    if action in ("paid", "failed") and (callback or not simulator):
        return f"transaction.provider_{action}"
    if action == "expired" and not simulator:
        return "transaction.deadline"
    return f"simulate.{action}"


def _created_fields(tx: TransactionRecord) -> dict[str, Any]:
    return {
        "paymentMethodId": tx["paymentMethodId"],
        "paymentMethod": tx["paymentMethod"],
        "amount": tx["amount"],
        "amountLocal": tx["amountLocal"],
        "currencyLocal": tx["currencyLocal"],
        "sandboxSimulate": tx["simulate"],
    }


def buyer_path(tx_id: str, token: str | None = None) -> str:
    return f"/c/{tx_id}.{token}" if token else f"/c/{tx_id}"


def next_poll(at: float) -> float:
    """The reconciliation poll runs on every 5-minute boundary of simulated time: its first run
    strictly after `at`, so never more than one interval away."""
    return (math.floor(at / RECONCILE_EVERY) + 1) * RECONCILE_EVERY


def checkout_path(tx_id: str, return_url: str | None, token: str | None = None) -> str:
    """The buyer's link to a checkout payment; a production hosted rail's carries the token of
    its provider page (`/c/<id>.<token>`): only that link leads on to the page that approves it
    (simulator/domain/providers/links.py)."""
    path = buyer_path(tx_id, token)
    return f"{path}?returnUrl={quote(return_url, safe='')}" if return_url else path


def _check_simulate_header(principal: Principal, simulate: str) -> None:
    """`Sandbox-Simulate`: sandbox credentials only, and one of the outcomes it can schedule."""
    if principal.environment != "sandbox":
        raise ApiError(
            "invalid_request",
            "The Sandbox-Simulate header only works with sandbox credentials.",
            param="Sandbox-Simulate",
        )
    if simulate not in SANDBOX_SIMULATE_VALUES:
        raise ApiError(
            "invalid_request",
            f"Sandbox-Simulate must be one of {', '.join(SANDBOX_SIMULATE_VALUES)}.",
            param="Sandbox-Simulate",
        )
