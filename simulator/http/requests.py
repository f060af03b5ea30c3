"""Reading requests: the JSON body rules (415, 400, 413, 408) and query parameters, in one place.

A body still arriving when its head has been read is read off the connection first, within the
body deadline (`receive_body`), before the request waits at the reset gate or counts as running.
Documented operations get their body parsed and validated against the OpenAPI document by the
validation middleware before the handler runs; `read_json` then hands the handler that body.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.parser
import email.policy
import json
import re
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.streams import StreamReader

from simulator.domain.checkout.service import buyer_ip
from simulator.domain.errors import ApiError
from simulator.http.aiohttp_private import HttpProcessingError, buffered_body, request_state
from simulator.http.keys import BODY, BODY_TOO_LARGE, RAW_BODY, REQUEST_URL_PREFIX, SETTINGS
from simulator.jsonio import JSONDecodeError, loads
from simulator.openapi.validation import QUERY_INTEGER

JSON_TYPES = ("application/json",)
# One JSON string token, and whether a colon follows it (then it is an object key). Scanning a
# valid document with finditer visits exactly its strings, in order, in linear time: after each
# match the next quote is the next string's opening quote.
_STRING_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?', re.DOTALL)
_IDENTITY = ("", "identity")
# A closing quote followed by JSON whitespace: where a key's colon may stand apart from it.
_QUOTE_GAP = re.compile(rb'"[ \t\n\r]')
T = TypeVar("T")
MAX_DEPTH = 32  # levels of objects and arrays in a body


async def receive_body(request: web.Request, timeout: float) -> ApiError | None:
    """Read a body that is still arriving off the connection, within `timeout` seconds (0: no
    deadline); the error to answer at once (and close the connection) when it cannot be had.

    Called before the request is handled, so that a client sending its body slowly holds only
    its own connection: not the reset gate, not a save, not a slot among the running requests.
    Once read, the body is aiohttp's cached `request.read()`. A body over the size limit is
    answered where it is parsed (`read_body`), after authentication, as it always was.
    """
    try:
        async with asyncio.timeout(timeout or None):
            await request.read()
    except web.HTTPRequestEntityTooLarge:
        request[BODY_TOO_LARGE] = True
    except TimeoutError:
        return ApiError(
            "request_timeout",
            f"The request body did not arrive within {timeout:g} s; the connection is closed.",
            details={"timeoutSeconds": timeout, "receivedBytes": request.content.total_bytes},
            headers={"Connection": "close"},
        )
    except (HttpProcessingError, ConnectionError) as exc:
        # Bad chunked framing, a body cut short by the client closing: nothing more can be read.
        reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return ApiError(
            "invalid_request",
            "The request body could not be read; the connection is closed.",
            details={"reason": " ".join(str(reason).split())[:200]},
            headers={"Connection": "close"},
        )
    return None


async def read_body(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The body as a JSON object. An absent body is `{}` when every field is optional."""
    raw = body_at_hand(request)
    if raw is None:
        _refuse_encoding(request)
        if request_state(request).get(BODY_TOO_LARGE):
            raise _too_large(request)
        try:
            raw = await request.read()  # read already by `receive_body`: its cached bytes
        except web.HTTPRequestEntityTooLarge:
            raise _too_large(request) from None
    return parse_body(request, raw, optional=optional)


def body_at_hand(request: web.Request) -> bytes | None:
    """The body when the whole of it came with its head and nothing has read it (a small body's
    usual case: `receive_body` reads only a body still arriving), uncompressed and within the
    size limit; None when it is to be read (or refused) by `read_body`.

    Taken where aiohttp's stream holds it, without consuming it: `request.read()` awaits the
    stream twice more to learn what is already known, and `read_nowait` re-runs the
    connection's parser on an empty chunk and resumes the transport (its flow control, which a
    body this small never paused; one at or above the stream's low-water mark is read the
    usual way), a twentieth of a payment's creation between them. Reads aiohttp's
    `StreamReader` state (`buffered_body`), whose class is checked first;
    tests/api/test_body_at_hand.py holds it."""
    content = request.content
    if type(content) is not StreamReader:  # no body (EMPTY_PAYLOAD), or not aiohttp's own
        return None
    raw = buffered_body(content)
    if raw is None:
        return None
    if request.headers.get("Content-Encoding", "") != "":
        return None  # `read_body` tells an accepted one (identity) from a refused one
    limit = request.client_max_size  # the bound `read` applies (the server's body limit)
    if limit and len(raw) > limit:
        return None
    return raw


def _refuse_encoding(request: web.Request) -> None:
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in _IDENTITY:
        # Refused before it is parsed (and the server never inflates bodies: see create_app),
        # so a compression bomb costs nothing; the connection closes after the answer.
        raise ApiError(
            "content_type_required",
            f"Send the JSON body uncompressed (Content-Encoding {encoding!r} is not accepted).",
            details={"contentEncoding": encoding},
            headers={"Connection": "close"},
        )


def parse_body(request: web.Request, raw: bytes, *, optional: bool = False) -> dict[str, Any]:
    """The JSON object of a body read (`read_body`, `body_at_hand`); kept for the request log."""
    request_state(request)[RAW_BODY] = raw
    if not raw.strip():
        if optional:
            return {}
        raise ApiError(
            "invalid_request",
            "A JSON object body is required.",
            details={"issues": [{"path": "", "message": "empty body"}]},
        )
    if request.headers.get("Content-Type") != "application/json" and (
        request.content_type not in JSON_TYPES
    ):
        raise ApiError(
            "content_type_required",
            f"Send the body with Content-Type: application/json (got "
            f"{request.headers.get('Content-Type') or 'none'}).",
        )
    try:
        body = loads(raw)
    except JSONDecodeError as exc:
        raise ApiError("invalid_json", f"The body is not valid JSON: {exc}.") from None
    if type(body) is not dict:
        raise ApiError(
            "invalid_request",
            "The body must be a JSON object.",
            details={"issues": [{"path": "", "message": "expected an object"}]},
        )
    _refuse_duplicate_keys(raw, body)
    return body


async def read_form(request: web.Request) -> dict[str, str]:
    """A posted HTML form's text fields (the first of a repeated name), url-encoded or multipart.

    aiohttp reads a multipart form straight off the connection, which `receive_body` may have
    read already: such a body is parsed here from the bytes read, by the standard library's MIME
    parser (which records a malformed part as a defect rather than raising)."""
    if request.content_type != "multipart/form-data":
        form = await request.post()
        return {
            name: value for name, value in reversed(list(form.items())) if isinstance(value, str)
        }
    head = b"Content-Type: " + request.headers["Content-Type"].encode("latin-1") + b"\r\n\r\n"
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        head + await request.read()
    )
    fields: dict[str, str] = {}
    for part in message.walk() if message.is_multipart() else ():
        name = part.get_param("name", header="content-disposition")
        content = part.get_payload(decode=True)
        if isinstance(name, str) and part.get_filename() is None and isinstance(content, bytes):
            fields.setdefault(name, _decoded(content, part.get_content_charset()))
    return fields


def _decoded(content: bytes, charset: str | None) -> str:
    try:
        return content.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return content.decode("utf-8", "replace")


def _too_large(request: web.Request) -> ApiError:
    limit = request.app[SETTINGS].body_limit
    return ApiError(
        "payload_too_large",
        f"The body exceeds {limit} bytes.",
        details={"limitBytes": limit},
    )


async def read_json(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The body the validation middleware read and checked, or (undocumented routes) read now."""
    body = request.get(BODY)
    if body is not None:
        return body
    return await read_body(request, optional=optional)


def checked_body(request: web.Request, kind: type[T]) -> T:
    """The typed body the validation middleware made of an operation's checked body (its
    reader in `simulator.openapi.validation.BODY_READERS`)."""
    body: object = request_state(request).get(BODY)
    if not isinstance(body, kind):
        raise TypeError(f"{request.method} {request.path}: no checked {kind.__name__} body")
    return body


def _members(value: Any) -> int:
    """How many key/value members the objects of a parsed document hold, nested ones included.

    Also refuses nesting deeper than MAX_DEPTH: no body of the API is more than a few levels deep,
    and deeper values would make recursive code (a validator's error message, a repr) overflow
    the stack long before orjson's own limit of 1,024 levels.
    """
    if type(value) is dict:
        for item in value.values():
            if isinstance(item, (dict, list)):
                break
        else:
            return len(value)  # a flat object (most bodies): one level, its own members
    count, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ApiError(
                "invalid_json",
                f"The body nests deeper than {MAX_DEPTH} levels.",
                details={"maxDepth": MAX_DEPTH},
            )
        if isinstance(item, dict):
            count += len(item)
            stack.extend((member, depth + 1) for member in item.values())
        elif isinstance(item, list):
            stack.extend((member, depth + 1) for member in item)
    return count


def _refuse_duplicate_keys(raw: bytes, body: dict[str, Any]) -> None:
    """400 invalid_json naming a key an object repeats.

    orjson keeps the last of duplicated keys silently, so `{"amount": 1, "amount": 1000}` would
    charge 1000 where another parser (a proxy, a log reader) sees 1. Cheap check first: the keys
    written in the text against the members parsed; only a mismatch parses again to name the key.
    """
    # One `{` and no `[` in the text: one object and no container in it (each nested object or
    # array writes one), so its members are its own. Else they are counted by a walk.
    members = len(body) if raw.count(b"{") == 1 and b"[" not in raw else _members(body)
    # Quicker still, for the usual body whose keys' closing quotes each meet their colon: every
    # key then writes `":`, so the text holds at least as many as it has keys, and at least as
    # many keys as parsed members; equal counts leave no room for a repeated key. (A string
    # value may add a `":` of its own; then the counts differ and the scan below decides.)
    if raw.count(b'":') == members and _QUOTE_GAP.search(raw) is None:
        return
    colons = _STRING_TOKEN.findall(raw)  # per string, what follows it: b"" unless a colon
    if len(colons) - colons.count(b"") == members:
        return
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen and not repeated:
                repeated.append(key)
            seen.add(key)
        return dict(items)

    # Deeper than the standard parser recurses, the key goes unnamed; the 400 stands.
    with contextlib.suppress(ValueError, RecursionError):
        json.loads(raw, object_pairs_hook=pairs)
    key = repeated[0] if repeated else None
    raise ApiError(
        "invalid_json",
        f"The body repeats the key `{key}`; each key may appear once per object."
        if key
        else "The body repeats a key; each key may appear once per object.",
        param=key,
        details={"duplicateKey": key},
    )


def query_int(
    request: web.Request, name: str, default: int, lo: int, hi: int, *, clamp: bool = True
) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not QUERY_INTEGER.fullmatch(raw):
        raise ApiError(
            "invalid_request",
            f"`{name}` must be an integer.",
            param=name,
            details={"issues": [{"path": name, "message": "not an integer"}]},
        )
    value = int(raw)
    if clamp:
        return max(lo, min(hi, value))
    if not lo <= value <= hi:
        raise ApiError("invalid_request", f"`{name}` must be between {lo} and {hi}.", param=name)
    return value


def query_choice(request: web.Request, name: str, choices: tuple[str, ...]) -> str | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    if raw not in choices:
        raise ApiError(
            "invalid_request",
            f"`{name}` must be one of {', '.join(choices)}.",
            param=name,
            details={"issues": [{"path": name, "message": f"one of {', '.join(choices)}"}]},
        )
    return raw


def base_url(request: web.Request) -> str:
    """The origin the caller reached, with `/ns/{name}` when the request is another namespace's
    than `default` (the front puts it on the request): every URL a namespace hands out routes
    back to it. Read from the request's own dict: `request.get` of a missing key raises and
    catches a KeyError, and `request.app[...]` is two calls more, on every `default` request
    (docs/performance.md, namespaces)."""
    prefix = request_state(request).get(REQUEST_URL_PREFIX, "")
    return f"{request.scheme}://{request.host}{prefix}"


def page_params(request: web.Request, *, max_limit: int = 100) -> tuple[int, int]:
    """(limit, offset) of an offset-paginated list; `limit` is clamped silently (spec Limits)."""
    return (
        query_int(request, "limit", 50, 1, max_limit),
        query_int(request, "offset", 0, 0, 2**31),
    )


def client_ip(request: web.Request) -> str | None:
    """The buyer's address as our edge reports it (see `buyer_ip` for the header order)."""
    return buyer_ip(
        request.headers.get("X-Forwarded-For"), request.headers.get("X-Real-IP"), request.remote
    )
