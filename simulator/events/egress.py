"""The egress policy at the edge: the delivery engine's client session checks every address.

Three checks, each on what aiohttp's client actually uses (simulator/domain/egress.py judges):
- `refusal_of_url`: the URL's host before anything else. A numeric host (every form, the
  legacy ones included) is judged by its address; aiohttp connects to an IP literal without
  asking the resolver, so this is the check for those.
- `GuardedResolver`: every name aiohttp resolves goes through it, on every connection it opens
  (aiohttp's DNS cache holds only answers that passed). All the addresses of a name are
  judged: one refused address refuses the name, so a name that answers a public and a private
  address (or changes its answer between two deliveries: DNS rebinding) never reaches the
  private one.
- `guarded_socket`: the connector's socket factory, handed each address just before it is
  connected to: the last word, whatever path the address came by.
Redirects are never followed (the engine posts with `allow_redirects=False`): a 3xx answer is
recorded as the attempt's outcome, so no hop goes unchecked.

A refusal raises `EgressRefused` (an OSError, as aiohttp expects from resolvers and sockets);
the engine records it as a failed attempt with its reason, and the delivery as failed.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import aiohttp
from aiohappyeyeballs import AddrInfoType, SocketFactoryType
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from simulator.domain.egress import EgressPolicy

REFUSED = "refused by the egress policy"

ResolverFactory = Callable[[], AbstractResolver]
# The resolver every world's engine resolves names with (`create_app(resolver=...)`; tests
# serve their own names there, never depending on DNS), None for aiohttp's own.
RESOLVER = web.AppKey[ResolverFactory | None]("egress_resolver")


class EgressRefused(OSError):
    """A connection the egress policy refuses; str() is the reason, ready to record."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{REFUSED}: {reason}")


def refusal_of_url(policy: EgressPolicy, host: str) -> str | None:
    verdict = policy.judge_host(host)
    return None if verdict.refusal is None else f"{REFUSED}: {verdict.refusal}"


def refusal_in(exc: BaseException) -> str | None:
    """The egress refusal behind a client error (aiohttp wraps what resolvers and sockets
    raise), or None for any other failure."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, EgressRefused):
            return str(seen)
        inner = getattr(seen, "os_error", None)
        seen = inner if isinstance(inner, BaseException) else (seen.__cause__ or seen.__context__)
    text = str(exc)
    start = text.find(REFUSED)
    return text[start:] if start >= 0 else None


class GuardedResolver(AbstractResolver):
    """A resolver that answers only addresses the policy allows (see the module's doc)."""

    def __init__(self, policy: EgressPolicy, inner: AbstractResolver, trusted: set[str]) -> None:
        self._policy = policy
        self._inner = inner
        # Addresses of names an allow rule names: the socket factory lets them through.
        self._trusted = trusted

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        verdict = self._policy.judge_host(host)
        if verdict.refusal is not None:
            raise EgressRefused(verdict.refusal)
        results = await self._inner.resolve(host, port, family)
        if verdict.trusted:
            self._trusted.update(r["host"] for r in results)
            return results
        for result in results:
            refusal = self._policy.judge_address(result["host"])
            if refusal is not None:
                raise EgressRefused(f"{host} resolves to {refusal}")
        return results

    async def close(self) -> None:
        await self._inner.close()


def guarded_socket(policy: EgressPolicy, trusted: set[str]) -> SocketFactoryType:
    """The connector's socket factory: refuses an address the policy refuses (unless a
    trusted name resolved to it) before any socket exists."""

    def make(addr_info: AddrInfoType) -> socket.socket:
        family, type_, proto, _, address = addr_info
        host = address[0]
        if host not in trusted:
            refusal = policy.judge_address(host)
            if refusal is not None:
                raise EgressRefused(refusal)
        return socket.socket(family=family, type=type_, proto=proto)

    return make


def guarded_connector(
    policy: EgressPolicy | None,
    resolver: ResolverFactory | None,
    *,
    limit: int,
    limit_per_host: int,
) -> aiohttp.TCPConnector:
    """The engine's connector: the policy at the resolver and the socket when there is one; a
    resolver factory (tests' names) either way."""
    inner = resolver() if resolver is not None else None
    if policy is None:
        return aiohttp.TCPConnector(limit=limit, limit_per_host=limit_per_host, resolver=inner)
    trusted: set[str] = set()
    return aiohttp.TCPConnector(
        limit=limit,
        limit_per_host=limit_per_host,
        resolver=GuardedResolver(policy, inner or aiohttp.ThreadedResolver(), trusted),
        socket_factory=guarded_socket(policy, trusted),
    )
