"""One worker's front: managing a namespace with the credential of one that lives elsewhere.

The proxy sends `/_sim/namespaces/{name}` to `name`'s owner, whoever asks. On one process a
credential of namespace `c` may create any namespace and is refused (403) showing or deleting
another; the owner of `name` cannot check `c`'s credential itself when `c` lives on another
worker. So it asks its siblings (`GET /ns/c/_sim/namespaces/c` with the caller's
`Authorization`, which only `c`'s owner answers 200), answers their refusal as it is (401, 400
production_key_refused...), and once the credential is good acts as one process would: creates
`name` (as `default`, whose fixture key it uses for the request: the request log of `default`
on this worker shows it), or refuses to show or delete it (403). If no sibling knows `c`, the
answer is the one process's for an unknown namespace. Only management requests whose caller is
not on this worker take this path; every other request is the plain front's.
"""

from __future__ import annotations

import asyncio
import re
import warnings

import aiohttp
from aiohttp import hdrs, web
from yarl import URL

from payorch.vocabulary import API_PREFIX
from simulator.domain.errors import ApiError
from simulator.domain.namespaces import DEFAULT, NAME_RULE, PATH_PREFIX, of_authorization
from simulator.http.front import FrontApplication
from simulator.http.handlers.namespaces import not_yours
from simulator.http.keys import CATALOG, SETTINGS, WORLDS
from simulator.http.peers import PEER_HEADER, RETRY_AFTER_SECONDS, TIMEOUT_SECONDS
from simulator.http.responses import REQUEST_ID_HEADER, refusal_response

# With or without a namespace's prefix, and with or without the control plane's /api/v1 alias.
_MANAGED = re.compile(
    "(?:"
    + re.escape(PATH_PREFIX)
    + "([^/]*))?(?:"
    + re.escape(API_PREFIX)
    + ")?/_sim/namespaces/("
    + NAME_RULE
    + ")"
)

ACCEPTED, UNKNOWN = "accepted", "unknown"

with warnings.catch_warnings():  # as simulator/http/front.py: aiohttp warns on subclasses
    warnings.simplefilter("ignore", DeprecationWarning)

    class WorkerFront(FrontApplication):
        """The front of one worker of several (`Settings.peers` given)."""

        async def dispatch(self, request: web.Request) -> web.StreamResponse:
            match = _MANAGED.fullmatch(request.rel_url.raw_path)
            if match is not None and PEER_HEADER not in request.headers:
                prefix, name = match.groups()
                credential = of_authorization(request.headers.get(hdrs.AUTHORIZATION))
                caller = prefix or credential
                agree = prefix is None or credential in (None, prefix)
                if (
                    agree
                    and caller not in (None, DEFAULT, name)
                    and self[WORLDS].find(caller) is None
                ):
                    assert caller is not None
                    return await self._for_sibling(request, caller, name)
            return await super().dispatch(request)

        async def _for_sibling(
            self, request: web.Request, caller: str, name: str
        ) -> web.StreamResponse:
            verdict = await _ask_owner(request, self[SETTINGS].peers, caller)
            if isinstance(verdict, web.Response):
                return verdict  # the owner's refusal
            if verdict == UNKNOWN:
                return await super().dispatch(request)  # nobody has `caller`: as one process
            if request.method == hdrs.METH_PUT and self[WORLDS].find(name) is not None:
                return _refusal(caller)  # an existing name answers as a GET by the caller
            if request.method == hdrs.METH_PUT:
                key = next(
                    c.secret for c in self[CATALOG].credentials if c.environment == "sandbox"
                )
                headers = request.headers.copy()
                headers[hdrs.AUTHORIZATION] = f"Bearer {key}"
                path = URL.build(
                    path=f"/_sim/namespaces/{name}",
                    query_string=request.rel_url.raw_query_string,
                    encoded=True,
                )
                made = await super().dispatch(request.clone(rel_url=path, headers=headers))
                # 200: made by someone else between the look and the creation; never its keys.
                return _refusal(caller) if made.status == 200 else made
            if request.method in (hdrs.METH_GET, hdrs.METH_DELETE):
                return _refusal(caller)
            return await super().dispatch(request)  # 405, as for anyone


def _refusal(caller: str) -> web.Response:
    """403 for a credential of `caller` (on a sibling) showing, deleting or re-creating
    another namespace, as one process answers it."""
    return refusal_response(not_yours(caller))


async def _ask_owner(
    request: web.Request, peers: tuple[str, ...], caller: str
) -> web.Response | str:
    """ACCEPTED: `caller`'s owner accepts the credential; a response: its refusal, to answer as
    is; UNKNOWN: no sibling has namespace `caller`."""
    headers = {PEER_HEADER: "1"}
    authorization = request.headers.get(hdrs.AUTHORIZATION)
    if authorization is not None:
        headers[hdrs.AUTHORIZATION] = authorization
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
    path = f"{PATH_PREFIX}{caller}/_sim/namespaces/{caller}"
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:

        async def ask(peer: str) -> web.Response | None:
            try:
                async with session.get(peer + path) as response:
                    return web.Response(
                        status=response.status,
                        body=await response.read(),
                        content_type=response.content_type,
                        headers={
                            k: v for k, v in response.headers.items() if k in _RELAYED_HEADERS
                        },
                    )
            except (TimeoutError, aiohttp.ClientError):
                return None

        answers = await asyncio.gather(*(ask(peer) for peer in peers))
    if any(a is not None and a.status == 200 for a in answers):
        return ACCEPTED
    for answer in answers:
        if answer is not None and answer.status != 404:
            return answer
    if None in answers:  # the one that did not answer may be `caller`'s
        return refusal_response(
            ApiError(
                "service_unavailable",
                "A worker of this server is not answering (restarting?); retry shortly.",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        )
    return UNKNOWN


_RELAYED_HEADERS = frozenset({REQUEST_ID_HEADER, "Retry-After"})
