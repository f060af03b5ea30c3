"""`payorch serve`'s options, one alias each, so that its signature reads as the list of what it
takes (payorch_cli/commands/serve.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Host = Annotated[str, typer.Option("--host", help="Interface to bind.")]
Port = Annotated[int, typer.Option("--port", min=0, max=65535, help="Port; 0 takes a free one.")]
NoRateLimit = Annotated[
    bool, typer.Option("--no-rate-limit", help="Turn the per-credential rate limit off.")
]
Fsync = Annotated[
    bool, typer.Option("--fsync", help="fsync every write (survives power loss, slower).")
]
LoopbackWebhooks = Annotated[
    bool,
    typer.Option(
        "--loopback-webhooks",
        help="Deliver webhooks to loopback hosts only; others are recorded as failed, never "
        "sent (for fuzzing with generated URLs).",
    ),
]
RequestLog = Annotated[
    int,
    typer.Option(
        "--request-log",
        min=0,
        metavar="N",
        help="Keep the last N requests in the request log (GET /_sim/requests, payorch logs "
        "tail); 0 turns it off.",
    ),
]
Workers = Annotated[
    str,
    typer.Option(
        "--workers",
        metavar="N|auto",
        help="Serve through nginx in front of N worker processes (auto: one per core); "
        "each namespace lives in one of them. 1: one process, no proxy.",
    ),
]
PrintProxyConfig = Annotated[
    bool,
    typer.Option(
        "--print-proxy-config",
        help="Moved to `payorch deploy-config` (still works here).",
        hidden=True,
    ),
]
WorkerAddresses = Annotated[
    list[str] | None,
    typer.Option(
        "--worker",
        metavar="HOST:PORT",
        help="A worker's address (--print-proxy-config).",
        hidden=True,
    ),
]
Listen = Annotated[
    str,
    typer.Option(
        "--listen",
        metavar="[ADDRESS:]PORT",
        help="The proxy's port (--print-proxy-config).",
        hidden=True,
    ),
]
Peers = Annotated[
    list[str] | None,
    typer.Option(
        "--peer",
        metavar="URL",
        help="A sibling worker's origin, when this server is one worker of several "
        "(docs/deploy.md).",
    ),
]
PublicUrl = Annotated[
    str | None,
    typer.Option(
        "--public-url",
        metavar="URL",
        help="The origin clients reach this server by (a proxy's), for URLs it hands out.",
    ),
]
LogRequests = Annotated[
    bool,
    typer.Option(
        "--log-requests",
        help="Print one line per request on standard output, after the Listening line "
        "(not those of payorch's own tools, such as the TUI's polling).",
    ),
]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Print only the Listening line (the next steps it prints on a terminal go).",
    ),
]
BodyTimeout = Annotated[
    float,
    typer.Option(
        "--body-timeout",
        min=0,
        metavar="SECONDS",
        help="Seconds a request body has to arrive whole once its head is in; a slower one "
        "is answered 408 request_timeout and its connection closed. 0: no limit.",
    ),
]
EgressAllow = Annotated[
    list[str] | None,
    typer.Option(
        "--egress-allow",
        metavar="CIDR|HOST",
        help="Let webhook deliveries reach this range, address or host (*.domain for "
        "every name under it) that the egress policy refuses; repeatable. Any egress rule "
        "turns the policy on, as team mode does (docs/deploy.md).",
    ),
]
EgressDeny = Annotated[
    list[str] | None,
    typer.Option(
        "--egress-deny",
        metavar="CIDR|HOST",
        help="Refuse webhook deliveries to this range, address or host; repeatable. The "
        "most specific rule decides.",
    ),
]
Team = Annotated[
    bool,
    typer.Option(
        "--team",
        help="A team server: owner and admin tokens, quotas, audit trail (README, "
        '"A team server").',
    ),
]
AdminTokenFile = Annotated[
    Path | None,
    typer.Option(
        "--admin-token-file",
        metavar="FILE",
        help="--team: the admin token (pat_...); without it one is made in the data dir "
        "(team/admin-token, mode 0600) on first start and printed once.",
    ),
]
InsecureShared = Annotated[
    bool,
    typer.Option(
        "--insecure-shared",
        help="Serve local mode on a non-loopback --host anyway: anyone who reaches it "
        "manages every namespace with the public fixture keys.",
    ),
]
TeamDir = Annotated[
    Path | None,
    typer.Option(
        "--team-dir",
        metavar="DIR",
        help="--team behind --workers: the team directory the workers share (the "
        "supervisor gives it).",
        hidden=True,
    ),
]
MaxNamespaces = Annotated[
    int,
    typer.Option(
        "--max-namespaces", min=0, metavar="N", help="Namespaces the server holds at most."
    ),
]
CreationsPerMinute = Annotated[
    int,
    typer.Option(
        "--namespace-creations-per-minute",
        min=0,
        metavar="N",
        help="Namespaces created per minute at most (429 namespace_rate_limited past it).",
    ),
]
NamespacesPerOwner = Annotated[
    int,
    typer.Option(
        "--namespaces-per-owner",
        min=0,
        metavar="N",
        help="--team: an owner's namespaces at most, unless its own quota says otherwise.",
    ),
]
NamespaceRps = Annotated[
    str,
    typer.Option(
        "--namespace-rps",
        metavar="N|sandbox",
        help="Requests per second per namespace (bursts of 5 s' worth; 429 rate_limited "
        "past it); sandbox: the preset (the starter tier's 200/s, bursts of 1,000); 0: off.",
    ),
]
NamespaceMaxObjects = Annotated[
    int,
    typer.Option(
        "--namespace-max-objects",
        min=0,
        metavar="N",
        help="Objects a namespace may hold (403 for writes past it); 0: no limit.",
    ),
]
NamespaceMaxBytes = Annotated[
    int,
    typer.Option(
        "--namespace-max-bytes",
        min=0,
        metavar="BYTES",
        help="Bytes on disk a namespace may hold (403 for writes past it); 0: no limit.",
    ),
]
