"""Frozen settings of one server, and the typed keys under which the app keeps its services."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simulator.domain.egress import EgressPolicy

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_DATA_DIR = Path(".payorch")
BODY_LIMIT_BYTES = 1024 * 1024
REQUEST_LOG_SIZE = 10_000
BODY_TIMEOUT_SECONDS = 10.0
NAMESPACES_IN_MEMORY = 1000
# Far above a laptop's or a CI fleet's use, well below what a runaway loop makes in a minute.
MAX_NAMESPACES = 5000
NAMESPACE_CREATIONS_PER_MINUTE = 600
NAMESPACES_PER_OWNER = 100


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    # None = an in-memory store (tests); serve always passes a directory.
    data_dir: Path | None = DEFAULT_DATA_DIR
    fixtures_dir: Path | None = None
    rate_limit: bool = True
    body_limit: int = BODY_LIMIT_BYTES
    fsync: bool = False
    # Scheduler tick in real seconds; 0 disables the background tick (tests drive the clock).
    tick_seconds: float = 0.2
    seed: int | None = None
    # Webhook deliveries only to loopback hosts (others are recorded as failed, never sent): for
    # fuzzing, where generated subscription URLs must not send traffic off this machine.
    webhooks_loopback_only: bool = False
    # Seconds a client has to send a whole request head (from connecting, or from its first
    # byte on a kept-alive connection) before its connection is closed (simulator/http/server.py).
    header_timeout: float = 10.0
    # Seconds a request body has to arrive whole once its head is in; then the request is
    # answered 408 request_timeout and the connection closed (simulator/http/requests.py). 0: none.
    body_timeout: float = BODY_TIMEOUT_SECONDS
    # Seconds a live-stream reader (GET /_sim/events, /_sim/requests/stream) may take nothing
    # while bytes wait for it before its connection is aborted (simulator/http/sse.py).
    stream_stall_timeout: float = 10.0
    # Entries kept per payment or payout trace; past it the first 100 and the newest stay
    # (simulator/domain/trace.py).
    trace_limit: int = 500
    # Requests kept in the request log (GET /_sim/requests); 0 turns it off.
    request_log: int = REQUEST_LOG_SIZE
    # Namespaces (simulator/worlds.py): at most this many worlds besides `default` stay in
    # memory (the least recently used is unloaded first), and one unused this many seconds of
    # real time is unloaded; either comes back on its next request.
    namespaces_in_memory: int = NAMESPACES_IN_MEMORY
    namespace_unload_seconds: float = 300.0
    # Open client connections at most; one more is answered 503 and closed. 0: no limit. serve
    # sizes it and `namespaces_in_memory` from the open-files limit (simulator/http/openfiles.py).
    max_connections: int = 0
    # One worker of several (payorch serve --workers, simulator/cluster/): the key of the
    # namespaces' key derivation, the same in every worker (None: the data dir's own); the
    # origin clients reach (the proxy's), for URLs built outside a request; the sibling workers'
    # origins, asked for their namespaces by GET /_sim/namespaces.
    namespace_secret: bytes | None = None
    public_url: str | None = None
    peers: tuple[str, ...] = ()
    # (index, count) of this worker among its siblings: it holds only the namespaces placed on
    # it (simulator/domain/placement.py) and refuses others. None: every name is its own.
    worker: tuple[int, int] | None = None
    # Team mode (design.md 1.10): a server shared by a team; the admin's token (GET /metrics).
    team: bool = False
    admin_token: str | None = None
    # Team mode behind --workers: the team directory every worker shares (owners and tokens,
    # the audit trail, the namespace ledger of simulator/team/ledger.py). None: the data dir's.
    team_dir: Path | None = None
    # The webhook egress policy (simulator/domain/egress.py): None is today's behaviour (any
    # address) outside team mode and the built-in denials in team mode; `payorch serve
    # --egress-allow/--egress-deny` sets one, which applies in either mode.
    egress_policy: EgressPolicy | None = None

    @property
    def egress(self) -> EgressPolicy | None:
        """The policy deliveries go by, or None when any address is allowed."""
        if self.egress_policy is not None:
            return self.egress_policy
        return EgressPolicy.parse() if self.team else None

    # Bounds on namespaces in every mode (issue 31): at most this many besides `default`, and
    # at most this many created per minute of wall-clock time (429 past it).
    max_namespaces: int = MAX_NAMESPACES
    namespace_creations_per_minute: int = NAMESPACE_CREATIONS_PER_MINUTE
    # Team mode (payorch serve --team, design.md 1.10): each owner's default quota (the flag and
    # the admin token, which /metrics and every management route read, are above).
    namespaces_per_owner: int = NAMESPACES_PER_OWNER
    # Requests per second (and burst) per namespace other than `default`; 0: no limit.
    namespace_rps: float = 0.0
    namespace_burst: int = 0
    # Objects and bytes on disk per namespace other than `default`; 0: no limit.
    namespace_max_objects: int = 0
    namespace_max_bytes: int = 0
