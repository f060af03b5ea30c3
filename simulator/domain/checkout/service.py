"""Hosted checkout: selector sessions (a `cs_` token the buyer opens) and one-shot sessions.

Pure: no aiohttp. The HTTP layer passes the request's origin (for absolute links) and the buyer's
IP; time comes from the context's clock. A selector session lives 24 simulated hours, is locked by
its first successful select, and is then unknown (404) like a token that never existed.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain.auth import Principal, resolve_shop
from simulator.domain.catalog import Environment, PaymentMethod, RequiredField, Shop
from simulator.domain.checkout.request import (
    CREATE_HELP,
    SELECT_HELP,
    SelectRequest,
    as_checkout_error,
    checkout_invalid,
    parse_session_request,
)
from simulator.domain.context import DomainContext
from simulator.domain.errors import ApiError
from simulator.domain.ids import unused, urlsafe_token
from simulator.domain.methods import MethodFilters, shop_methods
from simulator.domain.money import dec
from simulator.domain.payins.request import PaymentRequest, parse_payment_request
from simulator.domain.payins.service import PaymentService, buyer_path, checkout_path
from simulator.domain.ports import Table
from simulator.domain.providers.links import hosted_payment, opens_from_transaction_page
from simulator.domain.views import absolute

if TYPE_CHECKING:
    from simulator.domain.records import CheckoutSessionRecord, TransactionRecord

SESSION_SECONDS = 86_400.0
TOKEN_PREFIX = "cs_"
EXPIRE_JOB = "checkout.expire"
# Buyer fields of the transaction -> where the session customer keeps them.
CUSTOMER_KEYS = {"userEmail": "email", "userPhone": "phone", "documentId": "documentId"}


@dataclass(frozen=True, slots=True)
class MethodOption:
    """One tile of the method picker."""

    method: PaymentMethod
    amount_local: Decimal
    currency_local: str
    # Why this amount cannot use the method (limits), or None when it can.
    unavailable: str | None
    # Buyer fields the rail needs that the session's customer lacks (a hint on the tile; the
    # select asks for them by name).
    needs: tuple[RequiredField, ...]


@dataclass(frozen=True, slots=True)
class Picker:
    session: CheckoutSessionRecord
    shop_name: str
    options: tuple[MethodOption, ...]


# -- the buyer's address ---------------------------------------------------------------------


def _ip(value: str | None) -> str | None:
    if not value:
        return None
    candidate = value.strip()
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return None


def buyer_ip(forwarded_for: str | None, real_ip: str | None, peer: str | None) -> str | None:
    """The buyer's address: the trusted hop of X-Forwarded-For, then X-Real-IP, then the peer.

    Our edge appends the address it saw to X-Forwarded-For, so only the LAST entry is written by
    us; earlier entries come from the client (or proxies we do not run) and could be forged.
    """
    if forwarded_for:
        trusted = _ip(forwarded_for.split(",")[-1])
        if trusted:
            return trusted
    return _ip(real_ip) or _ip(peer)


# -- views -----------------------------------------------------------------------------------


def _masked(document: str | None) -> str | None:
    """The read is public to whoever holds the token, so the document shows its last 4 only."""
    if document is None:
        return None
    return "*" * max(len(document) - 4, 0) + document[-4:]


def full_name(customer: dict[str, str | None]) -> str:
    return f"{customer['firstName']} {customer['lastName']}"


def session_view(
    record: CheckoutSessionRecord, base_url: str, *, on_read: bool = False
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "sessionId": record["id"],
        "checkoutUrl": absolute(base_url, f"/checkout/{record['id']}"),
        "paymentMethodId": None,
        "status": record["status"],
        "amount": dec(record["amount"]),
        "currency": record["currency"],
        "country": record["country"],
        "expiresAt": isoformat(record["expiresAt"]),
    }
    if on_read:
        customer = dict(record["customer"])
        customer["documentId"] = _masked(customer.get("documentId"))
        view |= {
            "token": record["id"],
            "customer": customer,
            "customerIp": record["customerIp"],
            "returnUrl": record["returnUrl"],
            "completedTxId": record["completedTxId"],
        }
    return view


def one_shot_view(payment: dict[str, Any]) -> dict[str, Any]:
    """A one-shot session is its transaction: shape it from the transaction's create view."""
    return {
        "sessionId": payment["transactionId"],
        "checkoutUrl": payment["checkoutUrl"],
        "paymentMethodId": payment["paymentMethodId"],
        "status": payment["status"],
        "amount": payment["amount"],
        "currency": payment["currency"],
        "amountLocal": payment["amountLocal"],
        "currencyLocal": payment["currencyLocal"],
        "country": payment["country"],
        "expiresAt": payment["expiresAt"],
    }


def select_view(token: str, tx: TransactionRecord, base_url: str) -> dict[str, Any]:
    return {
        "sessionId": token,
        "transactionId": tx["id"],
        "checkoutUrl": absolute(
            base_url,
            checkout_path(tx["id"], tx.get("returnUrl"), tx.get("providerToken")),
        ),
        "status": tx["status"],
    }


def _payment_request(
    record: CheckoutSessionRecord,
    method: PaymentMethod,
    select: SelectRequest,
    user_ip: str | None,
) -> PaymentRequest:
    """The charge a select makes: the session's amount and buyer, with what the buyer typed on
    the page (the select body) winning over what the merchant sent."""
    customer = record["customer"]
    fields = {
        "currency": record["currency"],
        "paymentMethodId": method.id,
        "country": record["country"],
        "userName": select.full_name or full_name(customer),
        "userEmail": select.email or customer["email"],
        "documentId": select.document_id or customer.get("documentId"),
        "userPhone": customer["phone"],
        "userIp": user_ip,
        "merchantOrderId": record["merchantOrderId"],
        "returnUrl": record["returnUrl"],
    }
    # Not the hosted-checkout flag: it would demand a document on every rail, which the spec
    # makes optional in selector mode ("the provider asks for it").
    return PaymentRequest(dec(record["amount"]), fields, hosted_checkout=False)


# -- the service -----------------------------------------------------------------------------


def new_token(rng: random.Random | None = None) -> str:
    # 192 bits: the token is the only credential of the public endpoints. From the app's
    # generator, which is the OS's CSPRNG on every `serve`; only tests seed it.
    return TOKEN_PREFIX + urlsafe_token(rng, 24)


class CheckoutService:
    def __init__(
        self,
        ctx: DomainContext,
        payments: PaymentService,
        sessions: Table[CheckoutSessionRecord],
        token_factory: Callable[[], str] | None = None,
    ) -> None:
        self.ctx = ctx
        self.payments = payments
        self.sessions = sessions
        self._token_factory = token_factory or (lambda: new_token(ctx.rng))

    # -- create ------------------------------------------------------------------------------

    def create(self, principal: Principal, body: dict[str, Any], base_url: str) -> dict[str, Any]:
        """POST /checkout/sessions: one-shot when `paymentMethodId` is sent, else selector."""
        help_url = base_url + CREATE_HELP
        if body.get("paymentMethodId") is not None:
            return self._one_shot(principal, body, base_url, help_url)
        request = parse_session_request(body, help_url)
        self.ctx.fx.rate(request.currency)  # 422 fx_unavailable now, not when the buyer picks
        self._check_precision(request.amount, request.currency, help_url)
        shop = resolve_shop(principal, self.ctx.catalog, request.shop_id)
        grid = self._grid(principal.environment, shop, request.country)
        if not grid:
            where = f" in {request.country}" if request.country else ""
            raise ApiError(
                "method_not_enabled_for_shop",
                f"Shop {shop.id} has no payment method enabled{where}; it cannot start checkout.",
                param="country" if request.country else None,
            )
        self._check_payable(grid, request.amount, request.currency)
        now = self.ctx.now()
        token = unused(self._token_factory, self.sessions.get)
        record: CheckoutSessionRecord = {
            "id": token,
            "merchantId": principal.merchant.id,
            "shopId": shop.id,
            "environment": principal.environment,
            "status": "awaiting_method",
            "amount": str(request.amount),
            "currency": request.currency,
            "country": request.country,
            "customer": request.customer,
            "customerIp": None,
            "returnUrl": request.return_url,
            "merchantOrderId": request.merchant_order_id,
            "createdAt": now,
            "expiresAt": now + SESSION_SECONDS,
            "completedTxId": None,
        }
        self.sessions.put(token, record)
        self.ctx.coverage.reach("checkout.create", record)
        # The expiry check on read is what makes the token unknown; the job only frees storage.
        self.ctx.jobs.schedule(
            EXPIRE_JOB, record["expiresAt"], {"token": token}, job_id=f"{EXPIRE_JOB}:{token}"
        )
        return session_view(record, base_url)

    def _one_shot(
        self, principal: Principal, body: dict[str, Any], base_url: str, help_url: str
    ) -> dict[str, Any]:
        # POST /payments' parser already merges loose buyer fields with the `customer` block
        # (loose wins, the block fills gaps, malformed block values are not promoted).
        try:
            request = parse_payment_request({**body, "hostedCheckout": True})
        except ApiError as error:
            raise as_checkout_error(error, help_url) from None
        currency = self.ctx.fx.check_currency(request.currency or "USD")
        self.ctx.fx.rate(currency)
        self._check_precision(request.amount, currency, help_url)
        shop = resolve_shop(principal, self.ctx.catalog, request.shop_id)
        self._check_enabled(principal.environment, shop, request.payment_method_id or "")
        # No request_ip: the integrator's own address is not the buyer's (spec, selector mode).
        tx = self.payments.create(principal, shop, request)
        self.ctx.coverage.reach("checkout.one_shot", tx)
        return one_shot_view(self.payments.view(tx, base_url, on_create=True))

    def _check_precision(self, amount: Decimal, currency: str, help_url: str) -> None:
        """An amount finer than its currency, in checkout's one 400 shape (the amount issue)."""
        try:
            self.ctx.fx.check_precision(amount, currency)
        except ApiError as error:
            raise as_checkout_error(error, help_url) from None

    # -- reads ------------------------------------------------------------------------------

    def _live(self, token: str) -> CheckoutSessionRecord:
        record = None
        if token.startswith(TOKEN_PREFIX) and len(token) <= 64:
            record = self.sessions.get(token)
        if record is None or record["expiresAt"] <= self.ctx.now():
            raise ApiError(
                "checkout_session_not_found",
                "No checkout session for this token, or it is older than 24 hours.",
                param="token",
            )
        return record

    def read(self, token: str, base_url: str) -> dict[str, Any]:
        return session_view(self._live(token), base_url, on_read=True)

    def open_page(self, token: str, client_ip: str | None) -> Picker:
        """The buyer opened the checkout page: keep their address, list what they may pick."""
        record = self._live(token)
        shop = self.ctx.catalog.shops[record["shopId"]]
        if record["status"] != "awaiting_method":
            return Picker(record, shop.name, ())
        # The latest visit wins while no method is picked (a buyer may change networks).
        if client_ip and client_ip != record["customerIp"]:
            record["customerIp"] = client_ip
            self.sessions.put(record["id"], record)
        return Picker(record, shop.name, self._options(record, shop))

    def transaction(self, ref: str) -> tuple[TransactionRecord, bool]:
        """The payment behind a `/c/<id>[.<token>]` link (public by id; it shows what the buyer
        needs to pay and nothing about who they are), and whether the link carried the token
        of its provider page (`providers.links.hosted_payment`'s rule: a wrong token opens
        nothing). Only a tokened link may lead on to the page of a payment that has a token."""
        transaction_id, dot, _ = ref.partition(".")
        tx = self.ctx.transactions.get(transaction_id)
        if tx is not None and dot:
            tokened = tx.get("paymentFormPath") is not None and hosted_payment(
                self.ctx.transactions, ref
            )
            if not tokened:
                tx = None
        if tx is None or (tx["paymentFormPath"] and not opens_from_transaction_page(tx)):
            # A production direct charge's provider page is reached by its own link only.
            raise ApiError("transaction_not_found", f"No transaction {transaction_id}.")
        return tx, bool(dot)

    def buyer_link(self, transaction_id: str) -> str:
        """Where the buyer who proved a checkout session's token goes for its payment: the
        tokened `/c/` link of a production hosted rail, else `/c/<id>`."""
        tx = self.ctx.transactions.get(transaction_id)
        return buyer_path(transaction_id, tx.get("providerToken") if tx else None)

    def _grid(
        self, environment: Environment, shop: Shop, country: str | None
    ) -> list[PaymentMethod]:
        # Only routable methods are shown (spec: `routable` decides visibility).
        filters = MethodFilters(country=country)
        methods = shop_methods(self.ctx.catalog, shop, environment)
        return [m for m in methods if m.routable and filters.matches(m)]

    def _check_payable(self, grid: list[PaymentMethod], amount: Decimal, currency: str) -> None:
        """Refuse a session that no method of its grid could charge (over the 100,000 USD cap,
        or outside every method's bounds) with the error picking one would give; when some
        can, the others are shown greyed out instead."""
        refusal: ApiError | None = None
        for method in grid:
            try:
                self.payments.check_amount(method, amount, currency)
                return
            except ApiError as error:
                refusal = refusal or error
        if refusal is not None:
            raise refusal

    def _options(self, record: CheckoutSessionRecord, shop: Shop) -> tuple[MethodOption, ...]:
        amount, currency = dec(record["amount"]), record["currency"]
        customer = record["customer"]
        options = []
        for method in self._grid(record["environment"], shop, record["country"]):
            try:
                conversion = self.payments.check_amount(method, amount, currency)
                unavailable = None
            except ApiError as error:
                # Shown greyed out with the reason, rather than hidden: the buyer sees why.
                conversion = self.ctx.fx.convert(amount, currency, method.local_currency)
                unavailable = error.message
            needs = tuple(
                f
                for f in method.required_fields
                if f.key in CUSTOMER_KEYS and not customer.get(CUSTOMER_KEYS[f.key])
            )
            options.append(
                MethodOption(
                    method, conversion.amount_local, conversion.currency_local, unavailable, needs
                )
            )
        return tuple(options)

    # -- select -----------------------------------------------------------------------------

    def select(
        self, token: str, request: SelectRequest, client_ip: str | None, base_url: str
    ) -> TransactionRecord:
        """Create the session's pending transaction and lock the session to it."""
        record = self._live(token)
        if record["status"] == "completed":
            raise ApiError(
                "checkout_session_already_completed",
                f"This session already created transaction {record['completedTxId']}.",
                details={"existingTxId": record["completedTxId"]},
            )
        catalog = self.ctx.catalog
        shop = catalog.shops[record["shopId"]]
        environment: Environment = record["environment"]
        method = self._check_enabled(environment, shop, request.payment_method_id)
        if record["country"] and method.country_iso3 != record["country"]:
            # Enabled for the shop, so not a 403; the session's country keeps it off the grid.
            message = f"not offered in this session's country {record['country']}"
            raise checkout_invalid(
                [{"path": "paymentMethodId", "message": message}],
                [],
                base_url + SELECT_HELP,
            )
        user_ip = record["customerIp"] or client_ip
        payment = _payment_request(record, method, request, user_ip)
        # The charge is the merchant's, made for the session: its shop, in its environment.
        principal = Principal(
            catalog.merchants[record["merchantId"]], shop, environment, "secret", "checkout"
        )
        tx = self.payments.create(principal, shop, payment)
        # The buyer's link to it (the select answers it): the page it opens leads on to the
        # provider's page of a hosted rail.
        tx["checkoutPath"] = checkout_path(tx["id"], tx.get("returnUrl"), tx.get("providerToken"))
        self.ctx.transactions.save(tx)
        now = self.ctx.now()
        # The document was forwarded with the charge; like the transaction, keep no copy.
        record["customer"] = {**record["customer"], "documentId": None}
        record.update(
            {
                "status": "completed",
                "completedTxId": tx["id"],
                "customerIp": user_ip,
                "completedAt": now,
            }
        )
        self.sessions.put(token, record)
        self.ctx.coverage.reach("checkout.select", record)
        return tx

    def _check_enabled(self, environment: Environment, shop: Shop, method_id: str) -> PaymentMethod:
        """403 for a method outside the shop's listing (checkout's word for it, not cascade)."""
        for method in shop_methods(self.ctx.catalog, shop, environment):
            if method.id == method_id:
                return method
        raise ApiError(
            "method_not_enabled_for_shop",
            f"Payment method {method_id} is not enabled for shop {shop.id}; take codes from "
            "GET /payment-methods.",
            param="paymentMethodId",
            details={"paymentMethodId": method_id},
        )

    # -- jobs -------------------------------------------------------------------------------

    def expire(self, token: str) -> None:
        record = self.sessions.get(token)
        if record is not None and record["expiresAt"] <= self.ctx.now():
            self.sessions.delete(token)
