"""What every MCP tool talks through: the server's URL (and namespace prefix), the keys, and the
one rule for production credentials; API errors become `ToolFailure`, the API's error envelope
with a hint for an agent.

Keys: the sandbox secret key drives everything (the control plane is sandbox-only, design.md
1.3); its production twin (the same shop's live key, from the fixtures or the namespace's keys)
is used only where the API itself accepts production credentials: creating, reading and refunding
payments, and reading a trace. Started with a production key, the server has no sandbox key and
refuses every other tool before sending anything, with the API's own `production_key_refused`.

`Client` keeps one connection and is not thread-safe, and the SDK runs synchronous tools in
worker threads: calls are serialised by a lock (an agent's calls are sequential anyway).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from payorch.vocabulary import NAMESPACE_NAME_RULE
from payorch_cli.client import ApiError, Client
from payorch_cli.credentials import environment_of

# Its reads in the request log (X-Payorch-Tool): the agent's server's, not the CLI's.
MCP_TOOL = "mcp"
Environment = Literal["sandbox", "production"]
NAMESPACE_PATTERN = re.compile(NAMESPACE_NAME_RULE)

# What to do next, per error code: an agent reads the envelope's message and this.
HINTS: dict[str, str] = {
    "production_key_refused": (
        "This tool needs a sandbox secret key (sk_test_...): production keys may only create, "
        "read and refund payments and read a trace. Start `payorch mcp` with a sandbox --api-key."
    ),
    "transaction_not_found": (
        "No payment of this merchant has that id: ids look like TXN-...; list_payments shows "
        "them (pass environment=production for a production payment)."
    ),
    "payout_not_found": "No payout of this merchant has that id: payout ids look like po_...",
    "provider_not_found": (
        "Unknown provider id: sandbox_status lists the providers (prv_...) and their methods."
    ),
    "incident_not_found": "Unknown incident id: sandbox_status lists each provider's incidents.",
    "webhook_not_found": "Unknown subscription id: webhook_deliveries without one lists them all.",
    "snapshot_not_found": "No saved state of that name: sandbox_status lists the saved states.",
    "snapshot_exists": "A saved state has that name: pass overwrite=true to replace it.",
    "invalid_api_key": (
        "The server does not know this key (or it belongs to another namespace): read the "
        "payorch://credentials resource for the keys it accepts."
    ),
    "missing_credentials": "Start `payorch mcp` with --api-key (or PAYORCH_API_KEY).",
    "cascade_exhausted": (
        "Every provider of the method refused or was out: details.attempts name each one; "
        "sandbox_status shows incidents, end_incident or reset_sandbox put providers back."
    ),
    "simulate_sandbox_only": "Simulate a sandbox payment: production outcomes come from providers.",
    "connection_failed": (
        "The payorch server is not answering: start it (`payorch serve`), or run `payorch mcp` "
        "without --base-url to get an embedded one."
    ),
    "rate_limited": "Too many requests for this key: wait a second and call again.",
    "requests_in_flight": "Other requests are being served: call again in a moment.",
    "restore_in_progress": "A restore is under way: call again in a moment.",
    "internal_error": "A fault of payorch mcp itself, not of your call: please report it.",
}
DEFAULT_HINT = (
    "Check the arguments against the tool's input schema; the message and details say which "
    "value the API refused and why."
)


class ToolFailure(Exception):
    """A tool's error: the API's envelope (code, message, requestId, details) and a hint."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int = 400,
        hint: str | None = None,
        request_id: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.hint = hint or HINTS.get(code, DEFAULT_HINT)
        self.request_id = request_id
        self.details = details or {}

    @classmethod
    def of(cls, exc: ApiError) -> ToolFailure:
        return cls(
            exc.code,
            exc.message,
            status=exc.status,
            request_id=exc.request_id,
            details=exc.details,
        )

    def envelope(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.status:
            error["status"] = self.status
        if self.request_id:
            error["requestId"] = self.request_id
        if self.details:
            error["details"] = self.details
        error["hint"] = self.hint
        return {"error": error}

    def text(self) -> str:
        where = f" (request {self.request_id})" if self.request_id else ""
        return f"Error {self.code}: {self.message}{where}\nHint: {self.hint}"


def namespace_problem(name: str) -> str | None:
    """Why a --namespace is not a namespace name (design.md 1.6), or None."""
    if NAMESPACE_PATTERN.fullmatch(name):
        return None
    return (
        f"{name!r} is not a namespace name: 1 to 40 characters from a-z, 0-9 and -, starting "
        "with a letter or digit"
    )


@dataclass
class Sandbox:
    """One payorch server (or one namespace of it) and the keys to drive it."""

    base_url: str | None  # the server's root, without the namespace prefix; None: `ready`
    sandbox_key: str | None
    production_key: str | None = None
    namespace: str | None = None
    embedded: bool = False
    # A fixture sandbox key whose production twin is looked up when first needed (reading the
    # fixtures is start-up time an agent would wait for before its first tools/list).
    twin_of: str | None = None
    # The embedded server's URL once it listens: tools/list is answered while it still starts,
    # and the first call that needs it waits here (an error names why it did not start).
    ready: Callable[[], str] | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _clients: dict[str, Client] = field(default_factory=dict, repr=False)

    @property
    def api_url(self) -> str:
        """Where requests go: the server, under /ns/{name} when a namespace is given."""
        with self._lock:
            if self.base_url is None:
                self.base_url = self._wait()
        root = self.base_url.rstrip("/")
        return f"{root}/ns/{self.namespace}" if self.namespace else root

    def _wait(self) -> str:
        assert self.ready is not None, "a Sandbox without a base_url needs `ready`"
        try:
            return self.ready()
        except Exception as exc:
            raise ToolFailure(
                "embedded_server_failed",
                str(exc),
                status=0,
                hint="Restart `payorch mcp`; `payorch serve` shows why a server cannot start.",
            ) from None

    def production(self) -> str | None:
        """The production key, if there is one."""
        with self._lock:
            if self.production_key is None and self.twin_of is not None:
                self.production_key = production_twin(self.twin_of)
                self.twin_of = None
        return self.production_key

    def key(self, environment: Environment = "sandbox") -> str:
        key = self.sandbox_key if environment == "sandbox" else self.production()
        if key is not None:
            return key
        if environment == "sandbox":
            raise ToolFailure(
                "production_key_refused",
                "This MCP server holds a production key only; this tool is sandbox-only.",
            )
        raise ToolFailure(
            "production_key_unknown",
            "No production key is known for this sandbox key (it is not a fixture key).",
            hint="Use environment=sandbox, or start `payorch mcp` with the fixture keys (no "
            "--api-key) or the production key as --api-key.",
        )

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        environment: Environment = "sandbox",
    ) -> Any:
        """One API or control-plane call; ApiError becomes ToolFailure."""
        key = self.key(environment)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = Client(self.api_url, key, tool=MCP_TOOL)
            try:
                return client.request(method, path, body, query)
            except ApiError as exc:
                raise ToolFailure.of(exc) from None

    def get(self, path: str, environment: Environment = "sandbox", **query: Any) -> Any:
        return self.call("GET", path, query=query or None, environment=environment)

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()


def production_twin(key: str) -> str | None:
    """The same shop's production secret key, for a fixture sandbox key; None otherwise."""
    from payorch_cli.scenario.credentials import Credentials

    credentials = Credentials.builtin()
    own = credentials.by_key.get(key)
    if own is None or own.environment != "sandbox" or own.publishable:
        return None
    twin = credentials.by_name.get(own.name.split("/")[0] + "/production")
    return twin.key if twin is not None else None


def sandbox_for(
    base_url: str | None, api_key: str, namespace: str | None = None, embedded: bool = False
) -> Sandbox:
    """The Sandbox for a key: a production key is kept as the production key alone (the API
    allows it little); a fixture sandbox key gets its production twin."""
    if environment_of(api_key) == "production":
        return Sandbox(base_url, None, api_key, namespace, embedded)
    return Sandbox(base_url, api_key, None, namespace, embedded, None if namespace else api_key)


def namespace_sandbox(base_url: str, name: str, root_key: str) -> Sandbox:
    """A namespace's own keys (design.md 1.6): `PUT /_sim/namespaces/{name}` creates it or
    answers it unchanged, with its keys; the first shop's sandbox secret and its production twin
    are used."""
    client = Client(base_url, root_key, tool=MCP_TOOL)
    try:
        answer = client.request("PUT", f"/_sim/namespaces/{name}")
    except ApiError as exc:
        if exc.code in ("route_not_found", "method_not_allowed"):
            raise ToolFailure(
                "namespaces_unavailable",
                f"{base_url} serves no namespaces (PUT /_sim/namespaces/{name}: {exc.code}).",
                hint="Pass the namespace's own --api-key, or drop --namespace.",
            ) from None
        raise ToolFailure.of(exc) from None
    finally:
        client.close()
    rows = [row for row in answer.get("keys") or [] if row.get("shopId")]
    sandbox = next((r for r in rows if r.get("environment") == "sandbox"), None)
    if sandbox is None:
        raise ToolFailure("namespace_without_keys", f"Namespace {name} lists no sandbox shop key.")
    production = next(
        (
            r
            for r in rows
            if r.get("environment") == "production" and r.get("shopId") == sandbox["shopId"]
        ),
        None,
    )
    return Sandbox(
        base_url,
        sandbox["secretKey"],
        production["secretKey"] if production else None,
        name,
    )
