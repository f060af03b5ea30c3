"""POST /payments body: shape and field rules, before any method or provider is consulted."""

from __future__ import annotations

import ipaddress
from decimal import Decimal
from typing import Any, NamedTuple
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


class PaymentRequest(NamedTuple):
    """A NamedTuple, not a frozen dataclass: made on every payment, and three times faster."""

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
    issues: list[dict[str, str]] = []
    unknown = body.keys() - ALLOWED_FIELDS
    if unknown:
        issues.extend(_issue(key, "unknown field") for key in sorted(unknown))

    if "amount" not in body or body["amount"] is None:
        raise ApiError("missing_field", "`amount` is required.", param="amount")
    amount = parse_amount(body["amount"])

    values: dict[str, str | None] = dict.fromkeys(STRING_FIELDS)
    # Only the fields sent (a few of sixteen), in the order their issues are reported.
    for key in sorted(body.keys() & _STRING_FIELD_SET, key=_FIELD_RANK.__getitem__):
        value = body[key]
        if value is None:
            continue
        if not isinstance(value, str):
            issues.append(_issue(key, "must be a string"))
        elif len(value) > MAX_LENGTHS[key]:
            issues.append(_issue(key, f"at most {MAX_LENGTHS[key]} characters"))
        elif key in VERBATIM_FIELDS:
            values[key] = value
        elif key in CODE_FIELDS and not value.strip():
            issues.append(_issue(key, "must not be blank (null or absent means the default)"))
        else:
            values[key] = value.strip() or None

    hosted = body.get("hostedCheckout")
    if hosted is None:  # null is absent, as for every optional field
        hosted = False
    elif not isinstance(hosted, bool):
        issues.append(_issue("hostedCheckout", "must be a boolean"))
        hosted = False

    customer = body.get("customer")
    fallbacks: dict[str, str] = {}
    if customer is not None:
        if not isinstance(customer, dict):
            issues.append(_issue("customer", "must be an object"))
        else:
            extra = sorted(set(customer) - CUSTOMER_FIELDS)
            issues.extend(_issue(f"customer.{key}", "unknown field") for key in extra)
            fallbacks = _customer_fallbacks(customer)

    if values.get("userIp"):
        try:
            ipaddress.ip_address(values["userIp"] or "")
        except ValueError:
            issues.append(_issue("userIp", "not an IPv4 or IPv6 address"))
    if values.get("returnUrl"):
        parts = urlsplit(values["returnUrl"] or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            issues.append(_issue("returnUrl", "must be an absolute http(s) URL"))

    if issues:
        raise issues_error(issues)
    if not values.get("paymentMethodId") and not values.get("paymentMethod"):
        raise ApiError(
            "missing_field",
            "`paymentMethodId` is required (take it from GET /payment-methods).",
            param="paymentMethodId",
        )

    def buyer(key: str) -> str | None:
        return values.get(key) or fallbacks.get(key)

    return PaymentRequest(
        amount=amount,
        currency=values["currency"],
        payment_method_id=values["paymentMethodId"],
        payment_method=values["paymentMethod"],
        country=values["country"],
        user_name=buyer("userName"),
        user_email=buyer("userEmail"),
        document_id=buyer("documentId"),
        user_phone=buyer("userPhone"),
        user_ip=values["userIp"],
        merchant_order_id=values["merchantOrderId"],
        tags=(values["tag1"], values["tag2"], values["tag3"]),
        hosted_checkout=hosted,
        return_url=values["returnUrl"],
        merchant_id=values["merchantId"],
        shop_id=values["shopId"],
    )
