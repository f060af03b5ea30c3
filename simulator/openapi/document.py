"""The OpenAPI document: the hand-written source plus the error responses built from the catalogue.

The source (`openapi.yaml`, package data) names, per operation, the error codes it can give; this
module adds the codes every operation of its kind can give (its credential level, a JSON body,
query parameters) and turns them into one response per HTTP status, each status taken from
`simulator.domain.errors.CATALOGUE`: a status is never written twice. Imports neither aiohttp nor
jsonschema, so `payorch openapi` stays light.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from http import HTTPStatus
from importlib import resources
from typing import Any

import orjson
import yaml

from payorch import vocabulary
from simulator.domain.countries import ISO2_TO_ISO3
from simulator.domain.errors import CATALOGUE
from simulator.domain.ratelimit import TIER_QUOTAS

SOURCE = "openapi.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ERROR_SCHEMA = "#/components/schemas/ErrorEnvelope"

# What the auth middleware can answer before a handler runs, per `x-auth` level.
_CREDENTIAL_CODES = (
    "missing_credentials",
    "invalid_api_key",
    "invalid_token",
    "token_expired",
    "environment_mismatch",
    "merchant_suspended",
    "shop_suspended",
    "rate_limited",
)
AUTH_CODES: dict[str, tuple[str, ...]] = {
    "none": (),
    "token": (),  # the session token in the path is the credential: unknown is the op's 404
    "any": _CREDENTIAL_CODES,
    "secret": (*_CREDENTIAL_CODES, "key_kind_not_allowed"),
    "sandbox": (*_CREDENTIAL_CODES, "key_kind_not_allowed", "production_key_refused"),
    # Team mode's management routes: a sandbox secret credential, or a team token.
    "team": (
        *_CREDENTIAL_CODES,
        "key_kind_not_allowed",
        "production_key_refused",
        "invalid_team_token",
    ),
}
# What reading a JSON body can answer (simulator/http/requests.py): 408 request_timeout is a
# body that did not arrive whole within the server's body deadline.
BODY_CODES = (
    "content_type_required",
    "invalid_json",
    "invalid_request",
    "payload_too_large",
    "request_timeout",
)
# Every operation can fail unexpectedly, or be cut short by a server that is stopping (a request
# still running when the shutdown grace ends is answered 503, not dropped).
ALWAYS_CODES = ("internal_error", "service_unavailable")


class DocumentError(ValueError):
    """The source document is inconsistent (a test keeps this from ever shipping)."""


def load_source() -> dict[str, Any]:
    """The source document as written (YAML anchors and merge keys resolved)."""
    text = (resources.files("simulator.openapi") / SOURCE).read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    source: dict[str, Any] = yaml.load(text, Loader=loader)  # a safe loader (C if available)
    return source


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(path, method, operation, path item) for every operation of `doc`."""
    for path, item in doc["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                yield path, method, item[method], item


def has_query(doc: dict[str, Any], operation: dict[str, Any], path_item: dict[str, Any]) -> bool:
    shared = doc.get("components", {}).get("parameters", {})
    for parameter in (*path_item.get("parameters", ()), *operation.get("parameters", ())):
        if "$ref" in parameter:
            parameter = shared[parameter["$ref"].rsplit("/", 1)[-1]]
        if parameter.get("in") == "query":
            return True
    return False


def error_codes(
    doc: dict[str, Any], operation: dict[str, Any], path_item: dict[str, Any]
) -> list[str]:
    """Every code the operation can answer with, in a stable order (its own codes first)."""
    auth = operation.get("x-auth")
    if auth not in AUTH_CODES:
        raise DocumentError(f"{operation.get('operationId')}: x-auth {auth!r} is not a level")
    codes = list(operation.get("x-error-codes") or ())
    codes += AUTH_CODES[auth]
    if "requestBody" in operation:
        codes += BODY_CODES
    if has_query(doc, operation, path_item):
        codes.append("invalid_request")
    codes += ALWAYS_CODES
    unknown = [code for code in codes if code not in CATALOGUE]
    if unknown:
        raise DocumentError(f"{operation.get('operationId')}: unknown error codes {unknown}")
    return list(dict.fromkeys(codes))


def _quotas() -> str:
    """The tiers' rate limits, as the limiter applies them (never restated by hand)."""
    return "; ".join(
        f"{tier} {quota.per_second:g} requests/s (bursts of {quota.burst:,})"
        for tier, quota in TIER_QUOTAS.items()
    )


def _error_response(status: int, codes: list[str]) -> dict[str, Any]:
    listed = ", ".join(f"`{code}`" for code in codes)
    headers: dict[str, Any] = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}
    description = f"{HTTPStatus(status).phrase}: {listed}."
    if "rate_limited" in codes:
        headers["Retry-After"] = {"$ref": "#/components/headers/RetryAfter"}
        description += f" Per credential, by the merchant's tier: {_quotas()}."
    # One shared schema for every error response: a client generator makes one model of it (an
    # inline schema per operation and status made it write 1,235). The codes this operation can
    # answer with at this status are listed in the description and in `x-error-codes`.
    return {
        "description": description,
        "headers": headers,
        "x-error-codes": codes,
        "content": {"application/json": {"schema": {"$ref": ERROR_SCHEMA}}},
    }


def country_codes() -> list[str]:
    """The codes the server accepts (simulator.domain.countries), alpha-2 then alpha-3."""
    return [*ISO2_TO_ISO3, *ISO2_TO_ISO3.values()]


def country_pattern() -> str:
    """A pattern for exactly those codes, in any case, padding spaces allowed (trimmed)."""
    either = "|".join(
        "".join(f"[{c.upper()}{c.lower()}]" for c in code) for code in country_codes()
    )
    pad = "[^\\S\\u0000-\\u001f\\u007f]*"
    return f"^{pad}(?:{either}){pad}$"


def _countries(node: Any) -> None:
    """Every schema marked `x-country-code` gets the country table's pattern and enum."""
    if isinstance(node, dict):
        if node.get("x-country-code") is True:
            node["pattern"] = country_pattern()
            node["x-enum"] = country_codes()
            node["x-message"] = "unknown country code"
        for value in node.values():
            _countries(value)
    elif isinstance(node, list):
        for value in node:
            _countries(value)


def _vocabulary(name: str) -> list[Any]:
    values = getattr(vocabulary, name, None)
    if not isinstance(values, tuple) or not name.isupper():
        raise DocumentError(f"x-vocabulary: {name!r} is not a list of payorch.vocabulary")
    return list(values)


def _vocabularies(node: Any) -> None:
    """Every schema marked `x-vocabulary: NAME` gets the enum of that list of payorch.vocabulary
    (written once, for the simulator, the CLI and this document); a bare `{x-vocabulary: NAME}`
    becomes the list itself (an error's details naming the valid values)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict) and set(value) == {"x-vocabulary"}:
                node[key] = _vocabulary(value["x-vocabulary"])
            else:
                _vocabularies(value)
        if "x-vocabulary" in node:
            # Taken out: the served document says what it enumerates, not where it came from.
            name, extra = node.pop("x-vocabulary"), node.pop("x-vocabulary-extra", ())
            values = [*extra, *_vocabulary(name)]
            types = node.get("type")
            if isinstance(types, list) and "null" in types:
                values.append(None)
            node["enum"] = values
    elif isinstance(node, list):
        for value in node:
            _vocabularies(value)


def build(source: dict[str, Any]) -> dict[str, Any]:
    """The served document: `source` with every operation's error responses added, the
    shared error envelope's `code` enumerating the whole catalogue, and the enums of the names
    payorch.vocabulary lists filled from it."""
    doc = copy.deepcopy(source)
    _countries(doc)
    _vocabularies(doc)
    envelope = doc["components"]["schemas"][ERROR_SCHEMA.rsplit("/", 1)[-1]]
    envelope["properties"]["error"]["properties"]["code"]["enum"] = list(CATALOGUE)
    for _path, _method, operation, item in operations(doc):
        surface = operation.get("x-error-surface")
        responses: dict[str, Any] = operation["responses"]
        for written, response in responses.items():
            if int(written) >= 400:
                raise DocumentError(
                    f"{operation['operationId']}: error responses are built from x-error-codes"
                )
            response.setdefault("headers", {})["X-Request-Id"] = {
                "$ref": "#/components/headers/RequestId"
            }
        by_status: dict[int, list[str]] = {}
        for code in error_codes(doc, operation, item):
            by_status.setdefault(CATALOGUE[code].status_on(surface), []).append(code)
        for status in sorted(by_status):
            responses[str(status)] = _error_response(status, by_status[status])
    return doc


@functools.cache
def document() -> dict[str, Any]:
    """The served document, built once per process. Treat it as read-only."""
    return build(load_source())


@functools.cache
def document_json() -> bytes:
    """The served document as compact JSON (what GET /api/v1/openapi.json answers)."""
    return orjson.dumps(document())


def pretty_json() -> bytes:
    """The document as indented JSON with a final newline (what `payorch openapi` prints)."""
    return orjson.dumps(document(), option=orjson.OPT_INDENT_2) + b"\n"
