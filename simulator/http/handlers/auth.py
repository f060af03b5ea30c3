"""POST /auth/token and POST /auth/refresh."""

from __future__ import annotations

from aiohttp import web

from simulator.domain.auth import reused_refresh_token
from simulator.http.keys import AUTHENTICATOR, CLOCK, STORE
from simulator.http.middlewares import auth, owned_by
from simulator.http.owners import refresh_request_owner, token_request_owner
from simulator.http.requests import read_json
from simulator.http.responses import json_response


@auth("none")
@owned_by(token_request_owner)
async def issue_token(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        pair = request.app[AUTHENTICATOR].issue_tokens(
            body.get("apiKey"), body.get("secretKey"), request.app[CLOCK].timestamp()
        )
    return json_response(pair)


@auth("none")
@owned_by(refresh_request_owner)
async def refresh_token(request: web.Request) -> web.Response:
    body = await read_json(request)
    with request.app[STORE].batch():
        pair = request.app[AUTHENTICATOR].refresh(
            body.get("refreshToken"), request.app[CLOCK].timestamp()
        )
    if pair is None:  # a reused token: the chain's revocation is committed, the request refused
        raise reused_refresh_token()
    pair.pop("merchant", None)
    return json_response(pair)
