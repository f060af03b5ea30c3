"""Who owns a request made without a credential (`middlewares.owned_by`): the merchant of the
object its path or body names. The request log and coverage show the request to that merchant
only; one naming nothing known is nobody's (simulator/domain/requestlog.py)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from simulator.http.keys import AUTHENTICATOR, BODY, CHECKOUT, PAYMENTS, RAW_BODY
from simulator.http.middlewares import Owner


def _of(record: Any) -> Owner:
    if record is None:
        return None
    return record["merchantId"], record["environment"]


def _body(request: web.Request) -> dict[str, Any]:
    """The JSON body as validated, else as it was read (an invalid one names nobody)."""
    body = request.get(BODY)
    if body is None:
        raw = request.get(RAW_BODY)
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
    return body if isinstance(body, dict) else {}


def session_owner(request: web.Request) -> Owner:
    """A checkout session's token in the path (expired or not)."""
    return _of(request.app[CHECKOUT].sessions.get(request.match_info.get("token", "")))


def payment_owner(request: web.Request) -> Owner:
    """A payment's id in the path (`/c/<id>[.<token>]`, `/_sim/provider/<id>[.<token>]`)."""
    ref = request.match_info.get("transaction_id") or request.match_info.get("id") or ""
    return _of(request.app[PAYMENTS].ctx.transactions.get(ref.partition(".")[0]))


def token_request_owner(request: web.Request) -> Owner:
    """POST /auth/token: the merchant of the keys it names, once one is known."""
    body = _body(request)
    return request.app[AUTHENTICATOR].owner_of_keys(body.get("apiKey"), body.get("secretKey"))


def refresh_request_owner(request: web.Request) -> Owner:
    """POST /auth/refresh: the merchant the refresh token was issued to."""
    return request.app[AUTHENTICATOR].owner_of_refresh(_body(request).get("refreshToken"))
