"""Masking what the request log serves: secrets, credentials, tokened links, personal data.

Pure functions over decoded JSON values, strings, paths and queries; the request log applies them
when a detail, a list or a live tail reads a row (never on the request path).

In JSON bodies, and in query strings, the values of these keys are masked, wherever they are:

- `secretKey`, `secret`, `refreshToken`, `accessToken`, `documentId`, `cardNumber`, `pan`, and a
  card's `number` (inside an object under a key containing `card`): `****` and the last 4
  characters (values of 8 characters or fewer: `****` alone);
- `password`, `cvv`, `cvc`: `****`, nothing kept (the last digits of a CVV are most of it);
- any string of 13-19 digits (spaces or dashes allowed) that passes the Luhn check: a card
  number wherever it was put, `****` and its last 4 digits.

Key names are compared without case, `_` or `-` (`secret_key`, `SecretKey`). A body that is not
JSON, or was cut at `MAX_BODY`, is shown as text with the same keys masked wherever they appear as
`"key": "value"` or `key=value`.

Personal data: a buyer's or recipient's name, e-mail and address (`userName`, `userEmail`,
`email`, `fullName`, `firstName`, `lastName`, `userIp`, `customerIp`, and `name` inside a
`customer` or `recipient` object) are `****`; phones
(`userPhone`, `phone`) and `apiKey`/`publishableKey` keep their last 4 characters.

Credentials and links that work as credentials are masked wherever they appear in a string (a
body value, the path, the query, a URL inside a body): API keys (`sk_`/`pk_` + `test_`/`live_`),
refresh tokens (`rt_`), access tokens (JWTs), checkout session tokens (`cs_`: the session's API
path and its `/checkout/<token>` page), and the token of a production payment's links
(`/_sim/provider/<id>.<token>`, `/c/<id>.<token>`): the prefix or the id stays, then `****` and
the last 4 characters.

A JSON value nested past `MAX_DEPTH` levels is not walked (`TooDeep`): a hostile body must not
exhaust the stack; the log shows it as masked text.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

import orjson

MAX_DEPTH = 256  # levels of a JSON body walked for masking; a deeper one is shown as text

MASK = "****"
_KEEP_LAST_4 = frozenset(
    {
        "secretkey",
        "secret",
        "refreshtoken",
        "accesstoken",
        "documentid",
        "cardnumber",
        "pan",
        "apikey",
        "publishablekey",
        "userphone",
        "phone",
        "token",
    }
)
_HIDE_ALL = frozenset(
    {
        "password",
        "cvv",
        "cvc",
        "username",
        "useremail",
        "email",
        "fullname",
        "firstname",
        "lastname",
        "userip",
        "customerip",
    }
)
_PERSON_NAME = "name"  # masked inside an object under a key that names a person
_PERSONS = ("customer", "recipient", "buyer", "payer")
_CARD_NUMBER = "number"  # masked inside an object under a key that contains "card"
_DIGITS = re.compile(r"\d(?:[ -]?\d){12,18}")
_TEXT_KEYS = "|".join(
    sorted(
        {
            *_KEEP_LAST_4,
            *_HIDE_ALL,
            "secret_key",
            "secretKey",
            "refreshToken",
            "refresh_token",
            "accessToken",
            "access_token",
            "documentId",
            "document_id",
            "cardNumber",
            "card_number",
            "apiKey",
            "api_key",
            "publishableKey",
            "userPhone",
            "user_phone",
            "userName",
            "user_name",
            "userEmail",
            "user_email",
            "fullName",
            "full_name",
            "firstName",
            "lastName",
            "email",
            "phone",
        },
        key=len,
        reverse=True,
    )
)
# `"key": "value"` in JSON-looking text, and `key=value` in a form or query.
_TEXT_PAIR = re.compile(rf'("(?:{_TEXT_KEYS})"\s*:\s*")((?:[^"\\]|\\.)*)(")', re.IGNORECASE)
_FORM_PAIR = re.compile(rf"(\b(?:{_TEXT_KEYS})=)([^&\s]*)()", re.IGNORECASE)
# Credentials, and links that are credentials, wherever they are in a string: group 1 is kept,
# group 2 is masked (`****` and its last 4 characters).
_TOKENS = re.compile(
    r"\b((?:sk|pk)_(?:test|live)_|rt_|cs_)([A-Za-z0-9_-]{8,})"
    r"|()(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)"
    r"|((?:/_sim/provider/|/c/)[A-Za-z0-9_-]+\.)([A-Za-z0-9_-]{8,})"
)


def _norm(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def mask_value(value: Any, *, keep_last: bool = True) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    if not keep_last or len(text) <= 8:
        return MASK
    return MASK + text[-4:]


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _mask_card_numbers(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        digits = re.sub(r"[ -]", "", match.group(0))
        return MASK + digits[-4:] if _luhn(digits) else match.group(0)

    return _DIGITS.sub(replace, text) if len(text) >= 13 else text


def mask_string(text: str) -> str:
    """A string with the card numbers, keys, tokens and tokened links in it masked."""
    return _mask_card_numbers(mask_tokens(text)) if len(text) >= 8 else text


def _token_replacement(match: re.Match[str]) -> str:
    groups = match.groups()
    for kept, secret in zip(groups[::2], groups[1::2], strict=True):
        if secret is not None:
            return (kept or "") + MASK + secret[-4:]
    return match.group(0)


def mask_tokens(text: str) -> str:
    """`text` with every key, token and tokened link in it masked (the module doc)."""
    return _TOKENS.sub(_token_replacement, text)


class TooDeep(ValueError):
    """A JSON value nested past `MAX_DEPTH`: shown as masked text, not walked."""


def mask(value: Any, *, in_card: bool = False, in_person: bool = False, depth: int = 0) -> Any:
    """A copy of a decoded JSON value with its secrets masked (the rules in the module doc).
    Raises `TooDeep` past `MAX_DEPTH` levels: a hostile body must not exhaust the stack."""
    if depth > MAX_DEPTH:
        raise TooDeep(depth)
    if isinstance(value, dict):
        masked: dict[str, Any] = {}
        for key, item in value.items():
            name = _norm(key)
            if item is None or (isinstance(item, (dict, list)) and name not in _HIDE_ALL):
                masked[key] = mask(
                    item,
                    in_card="card" in name,
                    in_person=any(p in name for p in _PERSONS),
                    depth=depth + 1,
                )
            elif name in _HIDE_ALL or (in_person and name == _PERSON_NAME):
                masked[key] = MASK
            elif name in _KEEP_LAST_4 or (in_card and name == _CARD_NUMBER):
                masked[key] = mask_value(item)
            else:
                masked[key] = mask(item, depth=depth + 1)
        return masked
    if isinstance(value, list):
        return [mask(item, in_card=in_card, in_person=in_person, depth=depth + 1) for item in value]
    if isinstance(value, str):
        return mask_string(value)
    return value


def mask_text(text: str) -> str:
    """Text that is not (whole) JSON, with the same keys' values masked where they can be seen."""

    def replace(match: re.Match[str]) -> str:
        hide = _norm(match.group(1).strip('"=: ').rstrip('"')) in _HIDE_ALL
        return match.group(1) + mask_value(match.group(2), keep_last=not hide) + match.group(3)

    return mask_string(_FORM_PAIR.sub(replace, _TEXT_PAIR.sub(replace, text)))


def mask_path(path: str) -> str:
    """The path with the tokens it carries masked (a checkout session's, a provider page's)."""
    return mask_tokens(path) if "_" in path or "." in path else path


def mask_query(query: str) -> str:
    """The query string as sent, or re-encoded with its secrets masked if it holds any."""
    if not query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    masked = [(key, _masked_param(key, value)) for key, value in pairs]
    return query if masked == pairs else urlencode(masked, safe="*")


def _masked_param(key: str, value: str) -> str:
    name = _norm(key)
    if name in _HIDE_ALL:
        return MASK
    if name in _KEEP_LAST_4:
        return mask_value(value)
    return mask_string(value)
