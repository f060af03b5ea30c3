"""`GET /metrics` in team mode: Prometheus's text format, through the official `prometheus_client`.

One `CollectorRegistry` per server (the front application's, never the library's global one),
so two servers in one process (tests) keep their own figures. What it exposes:

- `payorch_http_requests_total{namespace, method, route, status}`: requests answered, by the
  route's template (`/api/v1/payments/{id}`, `unmatched` for no route; a method outside the
  usual seven is `OTHER`), counted once answered;
- `payorch_http_request_duration_seconds{namespace, route}`: their latency, a histogram;
- `payorch_webhook_deliveries_total{namespace, outcome}`: delivery attempts by outcome
  (`succeeded`, `failed`, `refused` by the egress policy);
- read at each scrape: `payorch_scheduler_jobs{namespace}` (jobs waiting, per loaded world),
  `payorch_worlds_loaded` (namespaces' worlds in memory, `default` included) and
  `payorch_disk_bytes{namespace}` (the data dir's bytes: each namespace's directory, the rest
  under `default`).

Admin only: `Authorization: Bearer <admin token>`, compared in constant time; 401 without a
credential, 403 with any other. Behind `--workers` (`Settings.peers` given) the worker nginx
sends the scrape to asks each sibling for its own figures (`PEER_HEADER`, which nginx clears
from clients' requests) and answers the sum of all, as the library's multiprocess mode sums the
processes' figures: one scrape target for the whole server.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import secrets
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from itertools import accumulate
from pathlib import Path
from time import perf_counter
from typing import Any

import aiohttp
from aiohttp import hdrs, web
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from simulator.domain.errors import ApiError
from simulator.http.peers import PEER_HEADER, TIMEOUT_SECONDS

PATH = "/metrics"
# Names the server that answered a scrape: a worker listed among its own peers (a deployment may
# give every worker the same --peer list) skips its own answer instead of counting it twice.
INSTANCE_HEADER = "X-Payorch-Instance"
UNMATCHED = "unmatched"
# Methods named as they are; any other (a client may send any token) as OTHER, so that no client
# can make series at will. Routes are templates and statuses a few: bounded too.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# (namespace name, jobs waiting in its scheduler) for every world in memory, `default` first.
LoadedWorlds = Callable[[], Iterable[tuple[str, int]]]


class Metrics:
    """One server's figures: counted on the request path and by the delivery engines, read at
    each scrape for the rest."""

    def __init__(self, admin_token: str | None, data_dir: Path | None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.instance = secrets.token_hex(8)
        self._admin = (admin_token or "").encode()
        self._data_dir = data_dir
        # The request path's figures are plain dicts, made into the library's metric families at
        # each scrape (`_RequestsCollector`): a Counter's and a Histogram's children take a lock
        # per increment and walk the buckets, 4 % of a payment's creation where these cost 1 %.
        # Requests answered, by (namespace, method, route, status).
        self.requests: dict[tuple[str, str, str, int], int] = {}
        # By (namespace, route): a count per bucket of LATENCY_BUCKETS, then +Inf's, then the sum.
        self.latency: dict[tuple[str, str], list[float]] = {}
        self.registry.register(_RequestsCollector(self))
        self._deliveries = Counter(
            "payorch_webhook_deliveries",
            "Webhook delivery attempts by outcome: succeeded, failed, refused (egress policy).",
            ["namespace", "outcome"],
            registry=self.registry,
        )

    def watch(self, worlds: LoadedWorlds) -> None:
        """The figures read at scrape time, from the worlds in memory and the data dir."""
        self.registry.register(_WorldsCollector(worlds, self._data_dir))

    # -- counting --------------------------------------------------------------------------------

    async def timed(
        self,
        request: web.Request,
        namespace: str,
        answer: Coroutine[Any, Any, web.StreamResponse],
    ) -> web.StreamResponse:
        """The request's answer, counted and timed once it is there."""
        started = perf_counter()
        response = await answer
        elapsed = perf_counter() - started
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else UNMATCHED
        method = request.method
        if method not in METHODS:
            method = "OTHER"
        key = (namespace, method, route, response.status)
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        timing = self.latency.get((namespace, route))
        if timing is None:
            timing = self.latency[namespace, route] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        timing[bisect_left(LATENCY_BUCKETS, elapsed)] += 1
        timing[-1] += elapsed
        return response

    def delivery(self, namespace: str, outcome: str) -> None:
        self._deliveries.labels(namespace, outcome).inc()

    # -- the endpoint ----------------------------------------------------------------------------

    def check_admin(self, authorization: str | None) -> None:
        """401 without a credential, 403 with anything but the admin token."""
        if not authorization:
            raise ApiError("missing_credentials", "GET /metrics needs the admin token as Bearer.")
        scheme, _, token = authorization.partition(" ")
        given = token.strip().encode() if scheme.lower() == "bearer" else b""
        if not self._admin or not hmac.compare_digest(given, self._admin):
            raise ApiError("permission_denied", "GET /metrics is for the server's admin only.")

    def exposition(self, accept: str, peers: tuple[str, ...] = ()) -> Awaitable[tuple[bytes, str]]:
        """The figures in the format the scraper accepts (the library's negotiation: the text
        format, or OpenMetrics when asked for), summed with `peers`' when given."""
        return _exposition(self.registry, accept, peers, self._admin.decode(), self.instance)


async def _exposition(
    registry: CollectorRegistry, accept: str, peers: tuple[str, ...], token: str, instance: str
) -> tuple[bytes, str]:
    encoder, content_type = choose_encoder(accept)
    if peers:
        registry = await merged(generate_latest(registry), peers, token, instance)
    return encoder(registry), content_type


async def merged(
    own: bytes, peers: Iterable[str], self_token: str, instance: str
) -> CollectorRegistry:
    """This worker's figures and each sibling's, summed per series (the earliest `_created`);
    its own answer, if it is among its peers, once."""
    headers = {hdrs.AUTHORIZATION: f"Bearer {self_token}", PEER_HEADER: "1"}
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def scrape(peer: str) -> str:
            async with session.get(peer.rstrip("/") + PATH, headers=headers) as response:
                if response.status != 200:
                    raise ApiError("service_unavailable", f"A worker answered {response.status}.")
                if response.headers.get(INSTANCE_HEADER) == instance:
                    return ""  # this server itself
                return await response.text()

        try:
            texts = await asyncio.gather(*(scrape(peer) for peer in peers))
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ApiError(
                "service_unavailable",
                f"A worker did not answer its metrics ({type(exc).__name__}); retry.",
                headers={"Retry-After": "1"},
            ) from None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Sum([own.decode(), *texts]))
    return registry


class _Sum(Collector):
    def __init__(self, texts: list[str]) -> None:
        self._texts = texts

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
        for text in self._texts:
            for family in text_string_to_metric_families(text):
                if family.name not in families:
                    families[family.name] = Metric(family.name, family.documentation, family.type)
                    values[family.name] = {}
                summed = values[family.name]
                for sample in family.samples:
                    key = (sample.name, tuple(sorted(sample.labels.items())))
                    before = summed.get(key)
                    if before is None:
                        summed[key] = sample.value
                    elif sample.name.endswith("_created"):
                        summed[key] = min(before, sample.value)
                    else:
                        summed[key] = before + sample.value
        for name, family in families.items():
            for (sample_name, labels), value in values[name].items():
                family.add_sample(sample_name, dict(labels), value)
            yield family


class _RequestsCollector(Collector):
    """The request path's counts as the library's families (see `Metrics.__init__`)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # read at each scrape; described then

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "payorch_http_requests",
            "Requests answered, by namespace, method, route template and status.",
            labels=["namespace", "method", "route", "status"],
        )
        for (namespace, method, route, status), count in list(self._metrics.requests.items()):
            requests.add_metric([namespace, method, route, str(status)], count)
        yield requests
        latency = HistogramMetricFamily(
            "payorch_http_request_duration_seconds",
            "Time to answer a request, by namespace and route template.",
            labels=["namespace", "route"],
        )
        bounds = [floatToGoString(b) for b in LATENCY_BUCKETS] + ["+Inf"]
        for (namespace, route), timing in list(self._metrics.latency.items()):
            cumulative = list(accumulate(timing[:-1]))
            latency.add_metric(
                [namespace, route], list(zip(bounds, cumulative, strict=True)), timing[-1]
            )
        yield latency


class _WorldsCollector(Collector):
    def __init__(self, worlds: LoadedWorlds, data_dir: Path | None) -> None:
        self._worlds = worlds
        self._data_dir = data_dir

    def describe(self) -> list[Metric]:
        return []  # read at each scrape; described then

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily(
            "payorch_scheduler_jobs",
            "Jobs waiting in the scheduler, per loaded namespace.",
            labels=["namespace"],
        )
        loaded = 0
        for name, pending in self._worlds():
            loaded += 1
            jobs.add_metric([name], pending)
        yield jobs
        yield GaugeMetricFamily(
            "payorch_worlds_loaded", "Namespaces' worlds in memory, default included.", loaded
        )
        disk = GaugeMetricFamily(
            "payorch_disk_bytes", "Bytes in the data dir, per namespace.", labels=["namespace"]
        )
        for name, size in sorted(disk_bytes(self._data_dir).items()):
            disk.add_metric([name], size)
        yield disk


def disk_bytes(data_dir: Path | None) -> dict[str, int]:
    """The data dir's bytes by namespace: `namespaces/<name>/` is that namespace's, the rest
    `default`'s (its store, snapshots...)."""
    sizes: dict[str, int] = {}
    if data_dir is None or not data_dir.is_dir():
        return sizes
    root = str(data_dir)
    spaces = os.path.join(root, "namespaces") + os.sep
    for directory, _, files in os.walk(root):
        if (directory + os.sep).startswith(spaces):
            rest = directory[len(spaces) :]
            name = rest.split(os.sep, 1)[0] if rest else ""
            if not name or name.startswith("."):
                continue  # the directory itself, or a namespace being deleted
        else:
            name = "default"
        for file in files:
            try:
                size = os.lstat(os.path.join(directory, file)).st_size
            except OSError:
                continue  # gone meanwhile
            sizes[name] = sizes.get(name, 0) + size
    return sizes
