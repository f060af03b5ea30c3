"""The nginx configuration in front of payorch workers: stock nginx, no router of ours.

Every request goes to the worker that owns its namespace. The namespace is read as the servers
read it (simulator/domain/namespaces.py, whose pattern texts are written in here, so the two
cannot drift), first match wins:

1. `/_sim/namespaces/{name}` (with or without a `/ns/...` prefix, and with or without the
   control plane's `/api/v1` alias): the namespace managed, so creating, showing and deleting
   one happen on its owner;
2. the path prefix `/ns/{name}`;
3. the credential in `Authorization`;
4. for `POST /api/v1/auth/token` and `/auth/refresh`, the credential in the JSON body: nginx reads
   the whole body (request buffering, in memory up to `client_body_buffer_size`) before it picks
   the upstream, so `$request_body` is set when the hash is computed;
5. else `default`.

`hash $payorch_namespace` then picks the owner (simulator/domain/placement.py is the same rule
in Python). `max_fails=0` and `proxy_next_upstream off`: a namespace never moves to another
worker; while its worker is down nginx answers 503 in the API's error envelope with
`Retry-After`, and every other worker carries on. What nginx refuses itself (a request it
cannot read, a body over the limit) is answered in the same envelope, as one payorch answers it
(`REFUSALS`), never with nginx's HTML pages.

`render` makes the text both for `payorch serve --workers N` (with `runtime`, the private
directory of its pid, temp files and logs) and for `payorch deploy-config`
(docs/deploy.md), so the deployed configuration is the tested one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from payorch.vocabulary import API_PREFIX, CREDENTIAL_IN_BODY_PATHS
from simulator.domain.errors import ApiError
from simulator.domain.namespaces import (
    AUTHORIZATION_RULE,
    BODY_CREDENTIAL_RULE,
    DEFAULT,
    NAME_RULE,
    PATH_PREFIX,
)
from simulator.settings import BODY_LIMIT_BYTES

# Long-lived server-sent-event streams: never buffered, read for as long as they last.
STREAMS = ("/_sim/events", "/_sim/requests/stream")
MANAGEMENT = "/_sim/namespaces/"
RETRY_AFTER_SECONDS = 1
STREAM_TIMEOUT = "24h"
REQUEST_TIMEOUT = "300s"
# nginx waits for a request head (as a whole) and a body (between two reads) as long as one
# payorch does (decisions.md, "Slow clients"), then closes the connection: on its own timeouts
# nginx sends nothing, so there is no answer to put in the error envelope.
CLIENT_TIMEOUT = "10s"
UPSTREAM = "payorch_workers"
# Idle connections to the workers each nginx process keeps: above the concurrent requests one
# expects, so that no request pays a new upstream connection (aiohttp's per-connection set-up
# costs more than the request; with too small a pool nginx opens and closes them under load).
UPSTREAM_KEEPALIVE = 256
UPSTREAM_KEEPALIVE_REQUESTS = 100_000


@dataclass(frozen=True, slots=True)
class Runtime:
    """Where a locally run nginx keeps its pid, temp files and error log (payorch serve)."""

    directory: Path

    @property
    def config(self) -> Path:
        return self.directory / "nginx.conf"

    @property
    def error_log(self) -> Path:
        return self.directory / "error.log"

    def command(self, nginx: str) -> list[str]:
        """The `nginx` binary's command line serving `config` in the foreground, with every file
        it writes in this directory (payorch serve, its tests and bench/workers.py run this)."""
        return [
            nginx,
            "-p",
            str(self.directory),
            "-c",
            str(self.config),
            "-e",
            str(self.error_log),
            "-g",
            "daemon off;",
        ]


def render(
    workers: Sequence[str],
    listen: str,
    *,
    runtime: Runtime | None = None,
    worker_processes: str = "auto",
    client_timeout: str = CLIENT_TIMEOUT,
) -> str:
    """nginx.conf for `workers` (`host:port`, in the order that numbers them) behind `listen`
    (`port` or `address:port`)."""
    if not workers:
        raise ValueError("at least one worker address")
    # The routing maps are regexes run on every request: compiled to machine code once.
    top = [f"worker_processes {worker_processes};", "pcre_jit on;"]
    temp = []
    if runtime is not None:
        d = runtime.directory
        top += [f"pid {d / 'nginx.pid'};", f"error_log {runtime.error_log} error;"]
        temp = [
            f"{kind}_temp_path {d / kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        ]
    servers = "\n".join(f"        server {w} max_fails=0;" for w in workers)
    return _TEMPLATE.format(
        top="\n".join(top),
        temp="".join(f"\n    {line}" for line in temp),
        routing=routing_maps(),
        upstream=UPSTREAM,
        servers=servers,
        keepalive=UPSTREAM_KEEPALIVE,
        keepalive_requests=UPSTREAM_KEEPALIVE_REQUESTS,
        listen=listen,
        body_buffer=_size(BODY_LIMIT_BYTES),
        max_body=_size(2 * BODY_LIMIT_BYTES),
        streams=_quote("^" + _control_plane_prefix() + "(?:" + "|".join(STREAMS) + ")$"),
        stream_timeout=STREAM_TIMEOUT,
        request_timeout=REQUEST_TIMEOUT,
        client_timeout=client_timeout,
        error_pages="\n".join(_error_page(r) for r in REFUSALS),
        refusals="\n\n".join(_refusal_location(r) for r in REFUSALS),
    ).lstrip()


def routing_maps() -> str:
    """The `map` blocks that set `$payorch_namespace` (the module docstring gives the order)."""
    name = f"({NAME_RULE})"
    management = "~^" + _control_plane_prefix() + MANAGEMENT + name + r"(?:\?|$)"
    prefix = "~^" + PATH_PREFIX + name + "(?:[/?]|$)"
    auth_endpoints = "~^POST (?:" + "|".join(CREDENTIAL_IN_BODY_PATHS) + r")(?:\?|$)"
    return f"""
    # The namespace of a request, as simulator/domain/namespaces.py reads it (generated from it).
    map $request_uri $payorch_path_namespace {{
        {_quote(management)} $1;
        {_quote(prefix)} $1;
        default "";
    }}
    map $http_authorization $payorch_credential_namespace {{
        {_quote("~^" + AUTHORIZATION_RULE)} $1;
        default $payorch_body_namespace;
    }}
    map "$request_method $request_uri" $payorch_body_namespace {{
        {_quote(auth_endpoints)} $payorch_request_body_namespace;
        default {DEFAULT};
    }}
    map $request_body $payorch_request_body_namespace {{
        {_quote("~" + BODY_CREDENTIAL_RULE)} $1;
        default {DEFAULT};
    }}
    map $payorch_path_namespace $payorch_namespace {{
        "" $payorch_credential_namespace;
        default $payorch_path_namespace;
    }}"""


_DOWN_MESSAGE = (
    "The worker serving this namespace is restarting; retry after the Retry-After seconds."
)
# The error pages' locations: a path with `//`, which no client can name (nginx merges a client's
# slashes, `merge_slashes`, before it picks a location), so no request of a client changes
# route. Not named locations (`@name`): nginx refuses to redirect a request whose line it could
# not read (no URI) to one, and answers its own HTML 500 instead.
REFUSAL_PREFIX = "//payorch/refused/"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An answer nginx makes itself, in the API's error envelope, where it would send its own
    HTML page for one of `statuses`: `code`'s status (the catalogue's), `message`, and
    `details.reason` as one payorch gives it for the same request."""

    slug: str
    statuses: tuple[int, ...]
    code: str
    message: str | None = None
    reason: str | None = None
    retry_after: bool = False

    @property
    def status(self) -> int:
        return ApiError(self.code).status

    @property
    def uri(self) -> str:
        return REFUSAL_PREFIX + self.slug


_UNREADABLE = "The request could not be read; the connection is closed."
REFUSALS = (
    Refusal("down", (502, 504), "service_unavailable", _DOWN_MESSAGE, retry_after=True),
    Refusal("too-large", (413,), "payload_too_large"),
    # One payorch answers a request it cannot parse 400 invalid_request whatever the reason (a
    # bad request line, header, version or framing, an over-long line), the reason in
    # `details`; nginx's statuses for the same (414, 494, 501, 505) are answered so too.
    Refusal("bad-request", (400,), "invalid_request", _UNREADABLE,
            "malformed request line, header or body framing"),
    Refusal("uri-too-long", (414,), "invalid_request", _UNREADABLE,
            "request line too long (over 8 KB)"),
    Refusal("headers-too-large", (494,), "invalid_request", _UNREADABLE,
            "request header too large (a header line over 8 KB, or over 32 KB in all)"),
    Refusal("unknown-encoding", (501,), "invalid_request", _UNREADABLE,
            "unsupported Transfer-Encoding"),
    Refusal("bad-version", (505,), "invalid_request", _UNREADABLE, "unsupported HTTP version"),
    # nginx refuses TRACE itself, on every path (a worker answers other methods' 405s).
    Refusal("method-not-allowed", (405,), "method_not_allowed"),
    # A fault of nginx's own (a temp file it cannot write); a worker's 500s pass through.
    Refusal("internal", (500,), "internal_error"),
)  # fmt: skip


def _error_page(refusal: Refusal) -> str:
    statuses = " ".join(map(str, refusal.statuses))
    changed = any(status != refusal.status for status in refusal.statuses)
    answer = f" ={refusal.status}" if changed else ""
    return f"        error_page {statuses}{answer} {refusal.uri};"


def _refusal_location(refusal: Refusal) -> str:
    retry = (
        f"\n            add_header Retry-After {RETRY_AFTER_SECONDS} always;"
        if refusal.retry_after
        else ""
    )
    details = {"reason": refusal.reason} if refusal.reason is not None else None
    body = _quote(_envelope(refusal.code, refusal.message, details))
    # No body limit here: nginx checks the limit again on entering a location, and a second
    # 413 (a refused body whose client already stopped sending) would be its HTML page.
    return f"""        location = {refusal.uri} {{
            internal;
            client_max_body_size 0;
            default_type application/json;{retry}
            add_header X-Request-Id req_$request_id always;
            return {refusal.status} {body};
        }}"""


_TEMPLATE = """
# Generated by payorch (simulator/cluster/nginx_config.py); regenerate rather than edit.
{top}

events {{
    worker_connections 4096;
}}

http {{
    access_log off;
    server_tokens off;{temp}
{routing}

    upstream {upstream} {{
        hash $payorch_namespace;
{servers}
        keepalive {keepalive};
        keepalive_requests {keepalive_requests};
    }}

    server {{
        listen {listen};
        # An auth endpoint's body is read whole, in memory, before the upstream is chosen.
        client_body_buffer_size {body_buffer};
        client_max_body_size {max_body};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Host $http_host;
        proxy_set_header X-Forwarded-Proto $scheme;
        # Only a worker asking its siblings sends this (GET /_sim/namespaces); never a client.
        proxy_set_header X-Payorch-Peer "";
        proxy_next_upstream off;
        proxy_read_timeout {request_timeout};
        client_header_timeout {client_timeout};
        client_body_timeout {client_timeout};
        merge_slashes on;  # what keeps the refusals' pages out of clients' reach
        # nginx's own refusals, in the API's error envelope rather than its HTML pages.
{error_pages}

        location / {{
            proxy_pass http://{upstream};
        }}

        location ~ {streams} {{
            proxy_pass http://{upstream};
            proxy_buffering off;
            proxy_read_timeout {stream_timeout};
        }}

{refusals}
    }}
}}
"""


def _optional_prefix() -> str:
    return "(?:" + PATH_PREFIX + "[^/?]*)?"


def _control_plane_prefix() -> str:
    """What may come before a `/_sim/...` path: a namespace's prefix, then the control plane's
    `/api/v1` alias (what a client generated from the OpenAPI document calls)."""
    return _optional_prefix() + "(?:" + API_PREFIX + ")?"


def _envelope(code: str, message: str | None, details: dict[str, str] | None = None) -> str:
    """The API's error body (simulator/domain/errors.py), with nginx's request id."""
    body = ApiError(code, message, details=details).body("req_@@")
    return json.dumps(body, separators=(",", ":")).replace("req_@@", "req_$request_id")


def _quote(text: str) -> str:
    """`text` as an nginx single-quoted string. nginx's parser turns a backslash before
    `'`, `"`, `\\`, `t`, `r` or `n` into something else; only those are escaped, so the
    regexes read as written (`\\s` stays `\\s`)."""
    return "'" + _NGINX_ESCAPE.sub(r"\\\g<0>", text) + "'"


_NGINX_ESCAPE = re.compile(r"'|\\(?=['\"\\tnr])")


def _size(limit: int) -> str:
    return f"{limit // 1024}k"
