"""Recipient checks of POST /me/payout/send: one check per recipient field type, run before any
provider is called, each problem named by its field (`recipient.<key>`).

Pure functions. The method's `recipientFields` (payout_methods.yaml) are the authority on which
fields a rail asks for; the national rules (check digits, lengths) are the issuers' own, through
`simulator.domain.documents`, so the simulator refuses exactly what a real provider refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from simulator.domain.catalog import RECIPIENT_FIELD_TYPES, PayoutMethod, RecipientField
from simulator.domain.documents import (
    clabe_problem,
    is_valid_cbu,
    is_valid_cnpj,
    is_valid_cpf,
    is_valid_curp,
    is_valid_document,
    is_valid_email,
    is_valid_rfc,
)
from simulator.domain.errors import invalid_request, issues_error

MAX_TEXT = 200
# Mobile numbers of the phone-wallet countries, national format without the country code.
PHONE_LENGTHS = {"CO": 10, "PE": 9}

_GENERIC_ID = re.compile(r"[A-Za-z0-9]{4,40}")
_PIX_PHONE = re.compile(r"\+55\d{10,11}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _digits(value: str, low: int, high: int | None = None) -> bool:
    # str.isdigit() also accepts "²" and other scripts' digits; only ASCII 0-9 is an account digit.
    return value.isascii() and value.isdigit() and low <= len(value) <= (high or low)


def _check_text(value: str, field: RecipientField, method: PayoutMethod, _: dict[str, str]) -> str:
    return f"at most {MAX_TEXT} characters" if len(value) > MAX_TEXT else ""


def _check_email(value: str, *_: Any) -> str:
    return "" if is_valid_email(value) else "not a valid e-mail address"


def _check_select(value: str, field: RecipientField, *_: Any) -> str:
    allowed = [option.value for option in field.options or ()]
    return "" if value in allowed else f"must be one of {', '.join(allowed)}"


def _check_clabe(value: str, *_: Any) -> str:
    return clabe_problem(value)


def _check_cbu(value: str, *_: Any) -> str:
    if not _digits(value, 22):
        return "a CBU/CVU has exactly 22 digits"
    return "" if is_valid_cbu(value) else "the CBU/CVU check digits do not match"


def _check_cci(value: str, *_: Any) -> str:
    return "" if _digits(value, 20) else "a Peruvian interbank code (CCI) has exactly 20 digits"


def _check_bank_account(value: str, *_: Any) -> str:
    return "" if _digits(value, 4, 20) else "an account number has 4 to 20 digits"


def _check_phone(value: str, field: RecipientField, method: PayoutMethod, _: Any) -> str:
    length = PHONE_LENGTHS.get(method.country)
    if length is not None:
        return "" if _digits(value, length) else f"a {method.country} mobile has {length} digits"
    return "" if _digits(value, 8, 15) else "a phone number has 8 to 15 digits"


def _check_document(value: str, field: RecipientField, method: PayoutMethod, values: Any) -> str:
    if any(sep in value for sep in ".-/ "):
        return "send the document without dots, dashes or spaces"
    if method.country == "MX":
        kind = values.get("documentType")
        if kind == "RFC":
            return "" if is_valid_rfc(value) else "not a valid RFC"
        if kind == "CURP":
            return "" if is_valid_curp(value) else "not a valid CURP"
        return "" if is_valid_rfc(value) or is_valid_curp(value) else "not a valid RFC or CURP"
    if method.country == "BR":
        if is_valid_cpf(value) or is_valid_cnpj(value):
            return ""
        return "a CPF (11 digits) or CNPJ (14 digits) with valid check digits"
    if method.country in ("CO", "CL", "PE", "AR"):
        ok = is_valid_document(method.country_iso3, value)
        return "" if ok else f"not a valid national id for {method.country}"
    # A rail without a national id (the USD e-mail wallet pays anyone): an ID or passport number.
    return "" if _GENERIC_ID.fullmatch(value) else "4 to 40 letters or digits"


def _check_pix_key(value: str, field: RecipientField, method: PayoutMethod, values: Any) -> str:
    kind = values.get("accountType")
    checks: dict[str, tuple[Callable[[str], bool], str]] = {
        "CPF": (lambda v: _digits(v, 11) and is_valid_cpf(v), "a CPF key has 11 valid digits"),
        "CNPJ": (lambda v: _digits(v, 14) and is_valid_cnpj(v), "a CNPJ key has 14 valid digits"),
        "EMAIL": (is_valid_email, "an EMAIL key is an e-mail address"),
        "PHONE": (lambda v: bool(_PIX_PHONE.fullmatch(v)), "a PHONE key is +55 and 10-11 digits"),
        "EVP": (lambda v: bool(_UUID.fullmatch(v)), "an EVP key is a UUID"),
    }
    if kind not in checks:
        return ""  # the accountType issue is reported on its own
    check, problem = checks[kind]
    return "" if check(value) else problem


_CHECKS: dict[str, Callable[[str, RecipientField, PayoutMethod, dict[str, str]], str]] = {
    "text": _check_text,
    "email": _check_email,
    "select": _check_select,
    "clabe": _check_clabe,
    "cbu": _check_cbu,
    "cci": _check_cci,
    "bank_account": _check_bank_account,
    "phone": _check_phone,
    "document": _check_document,
    "pix_key": _check_pix_key,
}
assert set(_CHECKS) == set(RECIPIENT_FIELD_TYPES), "one check per recipient field type"


def check_recipient(method: PayoutMethod, recipient: Any) -> dict[str, str]:
    """The recipient as validated strings, or 400 invalid_request naming every bad field."""
    if not isinstance(recipient, dict):
        problem = "required object" if recipient is None else "must be an object"
        raise invalid_request(
            f"`recipient` {problem}: {method.name} asks for "
            f"{', '.join(f.key for f in method.recipient_fields if f.required)}.",
            [{"path": "recipient", "message": problem}],
            param="recipient",
        )
    fields = {field.key: field for field in method.recipient_fields}
    issues = [
        {"path": f"recipient.{key}", "message": f"unknown field for {method.id}"}
        for key, value in recipient.items()
        if key not in fields and value is not None  # null is absent, even on another rail's field
    ]
    values: dict[str, str] = {}
    for key, field in fields.items():
        value = recipient.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            if field.required:
                issues.append({"path": f"recipient.{key}", "message": f"required ({field.label})"})
        elif not isinstance(value, str):
            issues.append({"path": f"recipient.{key}", "message": "must be a string"})
        else:
            values[key] = value.strip()
    for key, value in values.items():
        field = fields[key]
        problem = _CHECKS[field.type](value, field, method, values)
        if problem:
            issues.append({"path": f"recipient.{key}", "message": problem})
    if issues:
        raise issues_error(issues)
    return values


def mask_account(account: str) -> str:
    """What a payout shows of the account: enough to recognise it, not enough to reuse it."""
    if "@" in account:
        local, _, domain = account.partition("@")
        return f"{local[:1]}***@{domain}"
    return "****" + account[-4:]
