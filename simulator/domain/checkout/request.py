"""Checkout request bodies: POST /checkout/sessions (selector mode) and POST .../select.

Every problem of a body is collected and reported at once as the checkout 400: `invalid_request`
with `details.issues` [{path, message}], `details.missingFields` (flat list of absent paths) and
`details.helpUrl`. Customer strings are trimmed before they are checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from simulator.domain.countries import normalize_country
from simulator.domain.documents import is_valid_email
from simulator.domain.errors import ApiError, issues_error
from simulator.domain.fx import CURRENCY_PROBLEM, ISO4217
from simulator.domain.money import parse_amount

# Where `details.helpUrl` points: the operation in the OpenAPI document every server publishes
# (JSON pointers into `paths`; `{token}` is the literal path template, never a real token).
CREATE_HELP = "/api/v1/openapi.json#/paths/~1checkout~1sessions/post"
SELECT_HELP = "/api/v1/openapi.json#/paths/~1checkout~1sessions~1{token}~1select/post"

SESSION_FIELDS = frozenset(
    {"amount", "currency", "country", "customer", "merchantOrderId", "returnUrl", "shopId"}
)
# Spec limits ("Checkout customer fields"): (required, max length).
CUSTOMER_RULES: dict[str, tuple[bool, int]] = {
    "firstName": (True, 60),
    "lastName": (True, 60),
    "email": (True, 254),
    "phone": (True, 40),
    "documentId": (False, 40),
}
SELECT_FIELDS = frozenset({"paymentMethodId", "customer"})
# The spec's select body has {email, fullName}; documentId lets the page collect a document the
# merchant did not send when the picked rail needs one (see decisions.md, Checkout).
SELECT_CUSTOMER_RULES: dict[str, int] = {"email": 254, "fullName": 120, "documentId": 40}
# Codes POST /payments' parser raises for a bad body; checkout reports them in its own 400 shape.
BODY_ERROR_CODES = frozenset({"missing_field", "invalid_request", "amount_invalid"})


@dataclass(frozen=True, slots=True)
class SelectRequest:
    payment_method_id: str
    full_name: str | None = None
    email: str | None = None
    document_id: str | None = None


class _Problems:
    """Schema issues collected over a whole body, raised once as the checkout 400."""

    def __init__(self, help_url: str) -> None:
        self.help_url = help_url
        self.issues: list[dict[str, str]] = []
        self.missing: list[str] = []

    def absent(self, path: str) -> None:
        self.issues.append({"path": path, "message": "required"})
        self.missing.append(path)

    def invalid(self, path: str, message: str) -> None:
        self.issues.append({"path": path, "message": message})

    def text(
        self,
        data: dict[str, Any],
        key: str,
        path: str,
        max_len: int,
        *,
        required: bool,
        trim: bool = True,
    ) -> str | None:
        """A trimmed string, None when absent; blank after trimming counts as absent. `trim=False`
        keeps a caller's own reference verbatim, as POST /payments does."""
        value = data.get(key)
        if isinstance(value, str):
            value = (value.strip() if trim else value) or None
        if value is None:
            if required:
                self.absent(path)
            return None
        if not isinstance(value, str):
            self.invalid(path, "must be a string")
            return None
        if len(value) > max_len:
            self.invalid(path, f"at most {max_len} characters")
            return None
        return value

    def unknown(self, data: dict[str, Any], allowed: frozenset[str], prefix: str = "") -> None:
        for key in sorted(set(data) - allowed):
            self.invalid(f"{prefix}{key}", "unknown field")

    def raise_if_any(self) -> None:
        if self.issues:
            raise checkout_invalid(self.issues, self.missing, self.help_url)


def checkout_invalid(issues: list[dict[str, str]], missing: list[str], help_url: str) -> ApiError:
    return issues_error(
        issues,
        missingFields=missing,
        helpUrl=help_url,
    )


def as_checkout_error(error: ApiError, help_url: str) -> ApiError:
    """POST /payments' body errors (missing_field, amount_invalid ...) in the checkout 400 shape."""
    if error.code not in BODY_ERROR_CODES:
        return error
    details = error.details or {}
    issues = list(details.get("issues") or [])
    if not issues:
        message = "required" if error.code == "missing_field" else error.message
        issues = [{"path": error.param or "", "message": message}]
    missing = [error.param] if error.code == "missing_field" and error.param else []
    return checkout_invalid(issues, missing, help_url)


def _return_url(problems: _Problems, body: dict[str, Any]) -> str | None:
    url = problems.text(body, "returnUrl", "returnUrl", 2048, required=False)
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.invalid("returnUrl", "must be an absolute http(s) URL")
            return None
    return url


@dataclass(frozen=True, slots=True)
class SessionRequest:
    amount: Decimal
    currency: str
    country: str | None
    customer: dict[str, str | None]
    merchant_order_id: str | None
    return_url: str | None
    shop_id: Any


def parse_session_request(body: dict[str, Any], help_url: str) -> SessionRequest:
    """Selector-mode body: every problem at once, customer strings trimmed before the checks."""
    problems = _Problems(help_url)
    problems.unknown(body, SESSION_FIELDS)
    amount = Decimal(0)
    if body.get("amount") is None:
        problems.absent("amount")
    else:
        try:
            amount = parse_amount(body["amount"])
        except ApiError as error:
            problems.invalid("amount", error.message)
    currency = "USD"
    if body.get("currency") is not None:
        raw = body["currency"]
        if isinstance(raw, str) and ISO4217.fullmatch(raw):
            currency = raw
        else:
            problems.invalid("currency", CURRENCY_PROBLEM)
    country = None
    if body.get("country") is not None:
        try:
            country = normalize_country(body["country"])
        except ApiError:
            problems.invalid("country", "unknown country code")
    customer: dict[str, str | None] = {}
    raw_customer = body.get("customer")
    if raw_customer is None:
        raw_customer = {}
    if not isinstance(raw_customer, dict):
        problems.invalid("customer", "must be an object")
    else:
        problems.unknown(raw_customer, frozenset(CUSTOMER_RULES), "customer.")
        for key, (required, max_len) in CUSTOMER_RULES.items():
            path = f"customer.{key}"
            customer[key] = problems.text(raw_customer, key, path, max_len, required=required)
        if customer["email"] is not None and not is_valid_email(customer["email"]):
            problems.invalid("customer.email", "not a valid e-mail address")
    merchant_order_id = problems.text(
        body, "merchantOrderId", "merchantOrderId", 120, required=False, trim=False
    )
    return_url = _return_url(problems, body)
    problems.raise_if_any()
    return SessionRequest(
        amount=amount,
        currency=currency,
        country=country,
        customer=customer,
        merchant_order_id=merchant_order_id,
        return_url=return_url,
        shop_id=body.get("shopId"),
    )


def parse_select_request(body: dict[str, Any], help_url: str) -> SelectRequest:
    problems = _Problems(help_url)
    problems.unknown(body, SELECT_FIELDS)
    method_id = problems.text(body, "paymentMethodId", "paymentMethodId", 32, required=True)
    values: dict[str, str | None] = dict.fromkeys(SELECT_CUSTOMER_RULES)
    customer = body.get("customer")
    if customer is not None and not isinstance(customer, dict):
        problems.invalid("customer", "must be an object")
    elif customer is not None:
        problems.unknown(customer, frozenset(SELECT_CUSTOMER_RULES), "customer.")
        for key, max_len in SELECT_CUSTOMER_RULES.items():
            values[key] = problems.text(customer, key, f"customer.{key}", max_len, required=False)
        if values["email"] is not None and not is_valid_email(values["email"]):
            problems.invalid("customer.email", "not a valid e-mail address")
        if values["fullName"] is not None and len(values["fullName"].split()) < 2:
            problems.invalid("customer.fullName", "first and last name (at least 2 words)")
    problems.raise_if_any()
    assert method_id is not None  # a missing one was raised just above
    return SelectRequest(
        payment_method_id=method_id,
        full_name=values["fullName"],
        email=values["email"],
        document_id=values["documentId"],
    )
