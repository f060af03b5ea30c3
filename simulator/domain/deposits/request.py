"""POST /me/deposit-accounts and POST /me/deposits (a transfer in) bodies: shape and field rules,
before any account is looked up (`DepositService` applies what these return)."""

from __future__ import annotations

from typing import Any, NamedTuple

from simulator.domain.countries import normalize_country
from simulator.domain.documents import clabe_problem, is_valid_email
from simulator.domain.errors import ApiError, issues_error

# Text fields of POST /me/deposit-accounts and their maximum lengths (spec, Limits).
TEXT_LIMITS = {
    "endUserRef": 200,
    "name": 200,
    "email": 254,
    "phone": 40,
    "documentType": 20,
    "documentId": 60,
}
ACCOUNT_FIELDS = (*TEXT_LIMITS, "country", "metadata", "depositMethodId")
# An e-mail and a country code have a format, which an empty string does not meet; other blank
# fields count as absent (a required one is listed in `details.required`).
BLANK_IS_INVALID = frozenset({"email", "country"})
METADATA_MAX_KEYS = 20
METADATA_MAX_VALUE = 500
METADATA_MAX_KEY = 40  # not in the spec; keeps keys to identifier size
DEPOSIT_FIELDS = ("clabe", "amount", "payerName", "payerEmail")
MAX_PAYER_NAME = 200


class DepositRequest(NamedTuple):
    clabe: str
    payer_name: str | None
    payer_email: str | None
    amount: Any  # checked against the account's currency once it is found


def parse_deposit_request(body: dict[str, Any]) -> DepositRequest:
    """The transfer's CLABE and payer, or 400 with every issue listed (its amount is checked once
    the account, and so its currency, is known)."""
    issues = [{"path": k, "message": "unknown field"} for k in body if k not in DEPOSIT_FIELDS]
    clabe = body.get("clabe")
    problem = clabe_problem(clabe) if isinstance(clabe, str) else "an 18-digit CLABE is required"
    if problem:
        issues.append({"path": "clabe", "message": problem})
    payer_name = body.get("payerName")
    if payer_name is not None and (
        not isinstance(payer_name, str) or len(payer_name) > MAX_PAYER_NAME
    ):
        issues.append({"path": "payerName", "message": f"a string of {MAX_PAYER_NAME} max"})
    payer_email = body.get("payerEmail")
    if payer_email is not None and (
        not isinstance(payer_email, str) or not is_valid_email(payer_email)
    ):
        issues.append({"path": "payerEmail", "message": "not a valid e-mail address"})
    if issues:
        raise issues_error(issues)
    assert isinstance(clabe, str)
    return DepositRequest(clabe, payer_name, payer_email, body.get("amount"))


def parse_account_request(body: dict[str, Any]) -> dict[str, Any]:
    """The given fields, trimmed and typed (blank = absent), or 400 with every issue listed."""
    issues: list[dict[str, str]] = []
    fields: dict[str, Any] = {}
    for key, value in body.items():
        if key not in ACCOUNT_FIELDS:
            issues.append({"path": key, "message": "unknown field"})
        elif value is None:
            continue
        elif key == "metadata":
            problem = _metadata_problem(value)
            if problem:
                issues.append({"path": "metadata", "message": problem})
            else:
                fields["metadata"] = dict(value)
        elif not isinstance(value, str):
            issues.append({"path": key, "message": "must be a string"})
        elif value.strip():
            fields[key] = value.strip()
        elif key in BLANK_IS_INVALID:
            # Not absent (only null is): a bad value, refused whether or not the account exists.
            issues.append({"path": key, "message": "must not be blank"})
    for key, limit in TEXT_LIMITS.items():
        if key in fields and len(fields[key]) > limit:
            issues.append({"path": key, "message": f"at most {limit} characters"})
    if "email" in fields and not is_valid_email(fields["email"]):
        issues.append({"path": "email", "message": "not a valid e-mail address"})
    if "country" in fields:
        try:
            normalize_country(fields["country"])
        except ApiError:
            issues.append({"path": "country", "message": "not an ISO-2 or ISO-3 country code"})
        fields["country"] = fields["country"].upper()
    if issues:
        raise issues_error(issues)
    return fields


def _metadata_problem(value: Any) -> str:
    if not isinstance(value, dict):
        return "must be an object of string values"
    if len(value) > METADATA_MAX_KEYS:
        return f"at most {METADATA_MAX_KEYS} keys"
    for key, item in value.items():
        if not key or len(key) > METADATA_MAX_KEY:
            return f"keys are 1 to {METADATA_MAX_KEY} characters"
        if not isinstance(item, str):
            return f"metadata.{key} must be a string"
        if len(item) > METADATA_MAX_VALUE:
            return f"metadata.{key} is over {METADATA_MAX_VALUE} characters"
    return ""
