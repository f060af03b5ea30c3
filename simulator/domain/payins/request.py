"""POST /payments body: the typed request the domain receives, read once per request.

The OpenAPI document's `PaymentCreate` schema holds the body's shape (fields, types, lengths,
patterns); the validation middleware checks it before the handler runs and hands the checked body
to `read_payment_request`, which only reads it: trims, converts the amount, merges the `customer`
block, and applies the rules a schema cannot say (an IP address, an absolute URL, a method named
one way or the other). `parse_payment_request` is for a body no schema checked as a payment (a
one-shot checkout session's): the shape checks first, then the same reading.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from simulator.domain.documents import is_valid_email
from simulator.domain.errors import ApiError, issues_error
from simulator.domain.money import parse_amount

MAX_LENGTHS = {
    "userName": 120,
    "userEmail": 254,
    "documentId": 60,
    "userPhone": 40,
    "userIp": 64,
    "merchantOrderId": 120,
    "tag1": 200,
    "tag2": 200,
    "tag3": 200,
    "returnUrl": 2048,
    "paymentMethodId": 32,
    "paymentMethod": 32,
    "merchantId": 64,
    "shopId": 64,
    "country": 3,
    "currency": 3,
}
STRING_FIELDS = tuple(MAX_LENGTHS)
# The caller's own references: echoed verbatim (never trimmed), so a list filter on the exact value
# sent at creation finds the transaction.
VERBATIM_FIELDS = frozenset({"merchantOrderId", "tag1", "tag2", "tag3"})
# Codes with a default: only null (or leaving them out) asks for it; a blank one is a bad value.
CODE_FIELDS = frozenset({"currency", "country"})
ALLOWED_FIELDS = frozenset({*STRING_FIELDS, "amount", "hostedCheckout", "customer"})
_STRING_FIELD_SET = frozenset(STRING_FIELDS)
_FIELD_RANK = {key: rank for rank, key in enumerate(STRING_FIELDS)}
CUSTOMER_FIELDS = frozenset({"firstName", "lastName", "fullName", "email", "phone", "documentId"})


@dataclass(slots=True, init=False)
class PaymentRequest:
    """What a payment asks, read once per request. Its string fields come by the body's own
    names (`fields`, trimmed already): a plain class filled by one assignment per field, because
    seventeen keyword arguments bound to a constructor cost every payment 1.4-1.9 % of its
    instructions (docs/performance.md, wt-instr)."""

    amount: Decimal
    currency: str | None
    payment_method_id: str | None
    payment_method: str | None
    country: str | None
    user_name: str | None
    user_email: str | None
    document_id: str | None
    user_phone: str | None
    user_ip: str | None
    merchant_order_id: str | None
    tags: tuple[str | None, str | None, str | None]
    hosted_checkout: bool
    return_url: str | None
    merchant_id: str | None
    shop_id: str | None
    # As sent (an Idempotency-Key compares retries by it); None where no body made the request.
    body: dict[str, Any] | None

    def __init__(
        self,
        amount: Decimal,
        fields: Mapping[str, str | None],
        *,
        hosted_checkout: bool = False,
        body: dict[str, Any] | None = None,
    ) -> None:
        get = fields.get
        self.amount = amount
        self.currency = get("currency")
        self.payment_method_id = get("paymentMethodId")
        self.payment_method = get("paymentMethod")
        self.country = get("country")
        self.user_name = get("userName")
        self.user_email = get("userEmail")
        self.document_id = get("documentId")
        self.user_phone = get("userPhone")
        self.user_ip = get("userIp")
        self.merchant_order_id = get("merchantOrderId")
        self.tags = (get("tag1"), get("tag2"), get("tag3"))
        self.hosted_checkout = hosted_checkout
        self.return_url = get("returnUrl")
        self.merchant_id = get("merchantId")
        self.shop_id = get("shopId")
        self.body = body


def _issue(path: str, message: str) -> dict[str, str]:
    return {"path": path, "message": message}


def _customer_fallbacks(customer: dict[str, Any]) -> dict[str, str]:
    """Values of the `customer` block that may fill gaps; malformed ones are not promoted."""
    found: dict[str, str] = {}

    def text(key: str) -> str | None:
        value = customer.get(key)
        return value.strip() if isinstance(value, str) and value.strip() else None

    full = text("fullName")
    first, last = text("firstName"), text("lastName")
    name = full or (f"{first} {last}" if first and last else None)
    if name and len(name) <= MAX_LENGTHS["userName"]:
        found["userName"] = name
    email = text("email")
    if email and is_valid_email(email):
        found["userEmail"] = email
    phone = text("phone")
    if phone and len(phone) <= MAX_LENGTHS["userPhone"]:
        found["userPhone"] = phone
    document = text("documentId")
    if document and len(document) <= MAX_LENGTHS["documentId"]:
        found["documentId"] = document
    return found


def parse_payment_request(body: dict[str, Any]) -> PaymentRequest:
    """A body no schema checked: its shape first (the `PaymentCreate` rules, in this order), then
    `read_payment_request`."""
    issues: list[dict[str, str]] = []
    unknown = body.keys() - ALLOWED_FIELDS
    if unknown:
        issues.extend(_issue(key, "unknown field") for key in sorted(unknown))

    if "amount" not in body or body["amount"] is None:
        raise ApiError("missing_field", "`amount` is required.", param="amount")
    parse_amount(body["amount"])

    # Only the fields sent (a few of sixteen), in the order their issues are reported.
    for key in sorted(body.keys() & _STRING_FIELD_SET, key=_FIELD_RANK.__getitem__):
        value = body[key]
        if value is None:
            continue
        if not isinstance(value, str):
            issues.append(_issue(key, "must be a string"))
        elif len(value) > MAX_LENGTHS[key]:
            issues.append(_issue(key, f"at most {MAX_LENGTHS[key]} characters"))
        elif key in CODE_FIELDS and not value.strip():
            issues.append(_issue(key, "must not be blank (null or absent means the default)"))

    hosted = body.get("hostedCheckout")
    if hosted is not None and not isinstance(hosted, bool):
        issues.append(_issue("hostedCheckout", "must be a boolean"))

    customer = body.get("customer")
    if customer is not None:
        if not isinstance(customer, dict):
            issues.append(_issue("customer", "must be an object"))
        else:
            extra = sorted(set(customer) - CUSTOMER_FIELDS)
            issues.extend(_issue(f"customer.{key}", "unknown field") for key in extra)
    refused = {issue["path"] for issue in issues}
    request = read_payment_request({k: v for k, v in body.items() if k not in refused})
    check_payment_rules(request, issues)
    return request


def read_payment_request(body: dict[str, Any]) -> PaymentRequest:
    """The typed request of a body whose shape is known good: `PaymentCreate`'s schema passed
    (the validation middleware's reader), or `parse_payment_request` left out what it refused.
    Reads only: trims, converts the amount, fills buyer gaps from `customer`."""
    # Only the fields sent (a few of sixteen) are looked at.
    text: dict[str, str | None] = {}
    for key, value in body.items():
        if value.__class__ is str and key in _STRING_FIELD_SET:
            text[key] = value if key in VERBATIM_FIELDS else value.strip() or None
    get = text.get
    customer = body.get("customer")
    if customer:
        fallbacks = _customer_fallbacks(customer)
        for key, value in fallbacks.items():
            text[key] = get(key) or value
    return PaymentRequest(
        parse_amount(body["amount"]),
        text,
        hosted_checkout=body.get("hostedCheckout") is True,
        body=body,
    )


def check_payment_rules(
    request: PaymentRequest, issues: list[dict[str, str]] | None = None
) -> None:
    """The rules of a payment request a schema does not say, checked first thing when the payment
    is made (after the Idempotency-Key's checks, as always): an IP address, an absolute URL, a
    method named one way or the other. `issues` (a body's shape problems) are reported with
    them."""
    issues = [] if issues is None else issues
    if request.user_ip:
        try:
            ipaddress.ip_address(request.user_ip)
        except ValueError:
            issues.append(_issue("userIp", "not an IPv4 or IPv6 address"))
    if request.return_url:
        parts = urlsplit(request.return_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            issues.append(_issue("returnUrl", "must be an absolute http(s) URL"))
    if issues:
        raise issues_error(issues)
    if not request.payment_method_id and not request.payment_method:
        raise ApiError(
            "missing_field",
            "`paymentMethodId` is required (take it from GET /payment-methods).",
            param="paymentMethodId",
        )
