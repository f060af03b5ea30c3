"""Everything the TUI asks the server, as plain data; the only place its HTTP calls are built.

Built on `payorch_cli.client.Client` (stdlib `http.client`). Calls block, so the TUI makes them
in thread workers; a small pool of clients gives each concurrent worker its own keep-alive
connection (an `http.client` connection is not thread-safe). Every failure, including a body
that is not JSON or not the expected shape, becomes an `ApiError`: the UI shows it as a
notification and never crashes on a bad response.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from payorch.vocabulary import (
    PAYMENT_METHOD_SLUGS,
    PAYMENT_SIMULATE_ACTIONS,
    TRANSACTION_STATUSES,
)
from payorch_cli.client import ApiError, Client
from payorch_cli.tui import present
from payorch_cli.tui.stream import EventStreamReader

PAGE_SIZE = 50  # rows per transactions page: one request, well under the API's 100 cap
SCAN_PAGE = 100  # the API's cap: a search reads the list this many rows a request
SEARCH_SCAN = 2_000  # the newest transactions a search looks through for a part of an id
DELIVERIES_PER_WEBHOOK = 100

SIMULATE_ACTIONS = PAYMENT_SIMULATE_ACTIONS
STATUSES = TRANSACTION_STATUSES
METHODS = PAYMENT_METHOD_SLUGS
# The status each simulate action needs (the spec's simulate table; tests/unit/test_vocabulary.py
# holds it to the simulator's). A charged-back payment can be neither refunded nor charged back
# again, and production keys have no simulate at all.
SIMULATE_REQUIRES: dict[str, str] = {
    "paid": "pending",
    "failed": "pending",
    "expired": "pending",
    "refunded": "completed",
    "chargeback": "completed",
}


def simulate_actions(
    tx: Mapping[str, Any] | None, *, chargeback: bool = False, sandbox: bool = True
) -> tuple[str, ...]:
    """The simulate actions that can apply to `tx` as it is now, in key order (none for no
    transaction, or with a production key)."""
    if not tx or not sandbox:
        return ()
    disputed = chargeback or bool(tx.get("chargebackClaimId"))
    status = tx.get("status")
    return tuple(
        action
        for action in SIMULATE_ACTIONS
        if SIMULATE_REQUIRES[action] == status and not (disputed and status == "completed")
    )


# The request log's filters, as the Requests screen cycles them.
REQUEST_STATUSES = ("2xx", "4xx", "5xx")
HTTP_METHODS = ("GET", "POST", "PATCH", "DELETE")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the current key is (GET /ping)."""

    merchant_id: str
    merchant_name: str
    environment: str
    key_kind: str

    @property
    def sandbox(self) -> bool:
        return self.environment == "sandbox"


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[dict[str, Any]]
    total: int
    offset: int
    limit: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.limit))


def bad_response(what: str) -> ApiError:
    return ApiError("bad_response", f"Unexpected answer from the server: {what}.", 0)


def _dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad_response(f"{what} is not an object")
    return value


def _list(value: Any, what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise bad_response(f"{what} is not a list")
    return [item for item in value if isinstance(item, dict)]


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class Backend:
    # Above the server's 10 s webhook attempt timeout: a replay answers after its attempt.
    def __init__(
        self, base_url: str, api_key: str, timeout: float = 15.0, namespace: str | None = None
    ) -> None:
        # Applies the env/default fallbacks once; in a namespace, asks the server for the key's
        # counterpart there (so call it off the UI thread).
        probe = Client(base_url, api_key, namespace=namespace, tool="tui")
        self.root_url = probe.base_url
        self.namespace = probe.namespace
        self.given_key = probe.given_key  # what a switch to another namespace starts from
        self.base_url = probe.base_url + (f"/ns/{probe.namespace}" if probe.namespace else "")
        self.api_key = probe.api_key
        probe.close()
        self.timeout = timeout
        self._idle: list[Client] = []
        self._lock = threading.Lock()

    # -- transport -------------------------------------------------------------------------------

    @contextmanager
    def _client(self) -> Iterator[Client]:
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            # Its reads (the screens' polling) are tagged: the log, record and coverage leave
            # them out; an action the user takes from a screen is theirs, untagged.
            client = Client(self.base_url, self.api_key, timeout=self.timeout, tool="tui")
        ok = False
        try:
            yield client
            ok = True
        finally:
            if ok:
                with self._lock:
                    self._idle.append(client)
            else:
                client.close()  # its connection may be half-read: never reuse it

    def call(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        try:
            with self._client() as client:
                return client.request(method, path, body, query)
        except ApiError:
            raise
        except (ValueError, UnicodeDecodeError) as exc:  # a body that is not JSON
            raise bad_response(f"not JSON ({exc})") from None
        except (http.client.HTTPException, OSError) as exc:  # truncated or garbled HTTP
            raise ApiError(
                "connection_failed", f"Cannot talk to {self.base_url}: {exc!r}", 0
            ) from None

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()

    def open_stream(self) -> EventStreamReader:
        """A reader of `GET /_sim/events` for this key (read it in a worker)."""
        return EventStreamReader(self.base_url, self.api_key)

    def namespaces(self) -> list[str]:
        """The server's namespaces (GET /_sim/namespaces, outside any namespace's prefix), asked
        with the key as given: one of `default`'s sees every namespace, a namespace's own key
        only its namespace."""
        client = Client(self.root_url, self.given_key, timeout=self.timeout, tool="tui")
        try:
            data = _dict(client.namespace_call("GET"), "GET /_sim/namespaces")
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_response(f"not JSON ({exc})") from None
        except (http.client.HTTPException, OSError) as exc:
            raise ApiError(
                "connection_failed", f"Cannot talk to {self.root_url}: {exc!r}", 0
            ) from None
        finally:
            client.close()
        rows = _list(data.get("data"), "GET /_sim/namespaces data")
        return [str(row["name"]) for row in rows if isinstance(row.get("name"), str)]

    # -- identity and clock ----------------------------------------------------------------------

    def ping(self) -> Identity:
        data = _dict(self.call("GET", "/ping"), "GET /ping")
        merchant = present.obj(data.get("merchant"))
        return Identity(
            merchant_id=str(merchant.get("id") or "?"),
            merchant_name=str(merchant.get("name") or merchant.get("id") or "?"),
            environment=str(data.get("environment") or "?"),
            key_kind=str(data.get("keyKind") or "?"),
        )

    def team(self) -> str:
        """On a team server, the owner and quota of the namespace watched (GET
        /_sim/team/whoami with the key in use); "" in local mode, which has no owners."""
        try:
            view = _dict(self.call("GET", "/_sim/team/whoami"), "GET /_sim/team/whoami")
        except ApiError:
            return ""
        return present.owner_and_quota(view)

    def clock(self) -> dict[str, Any]:
        return _dict(self.call("GET", "/_sim/clock"), "GET /_sim/clock")

    def advance_clock(self, seconds: float) -> dict[str, Any]:
        return _dict(
            self.call("POST", "/_sim/clock/advance", {"seconds": seconds}), "clock advance"
        )

    # -- pay-ins ---------------------------------------------------------------------------------

    def payments(
        self,
        *,
        offset: int = 0,
        limit: int = PAGE_SIZE,
        status: str | None = None,
        method: str | None = None,
        merchant_order_id: str | None = None,
    ) -> Page:
        query = {
            "limit": limit,
            "offset": offset,
            "status": status,
            "method": method,
            "merchantOrderId": merchant_order_id,
        }
        data = _dict(self.call("GET", "/payments", query=query), "GET /payments")
        pagination = present.obj(data.get("pagination"))
        rows = _list(data.get("data"), "GET /payments data")
        return Page(rows, _int(pagination.get("total"), len(rows)), offset, limit)

    def search_payments(
        self, text: str, *, status: str | None = None, method: str | None = None
    ) -> Page:
        """The transactions whose id or merchantOrderId contains `text` (any case), newest
        first, at most a page of them. The API matches only whole values, so a whole id is
        fetched and a whole merchantOrderId filtered on the server; anything else is looked
        for in the newest SEARCH_SCAN transactions (with the filters), SCAN_PAGE a request."""
        text = text.strip()
        if text.upper().startswith("TXN-"):
            try:
                tx = self.payment(text.upper())
            except ApiError as exc:
                if exc.code != "transaction_not_found":
                    raise
            else:
                if present.search_matches(tx, text, status=status, method=method):
                    return Page([tx], 1, 0, PAGE_SIZE)
        exact = self.payments(status=status, method=method, merchant_order_id=text)
        if exact.rows:
            return exact
        found: list[dict[str, Any]] = []
        offset = 0
        while offset < SEARCH_SCAN and len(found) < PAGE_SIZE:
            page = self.payments(offset=offset, limit=SCAN_PAGE, status=status, method=method)
            found.extend(tx for tx in page.rows if present.search_matches(tx, text))
            offset += SCAN_PAGE
            if offset >= page.total or not page.rows:
                break
        return Page(found[:PAGE_SIZE], len(found[:PAGE_SIZE]), 0, PAGE_SIZE)

    def payment(self, transaction_id: str) -> dict[str, Any]:
        return _dict(self.call("GET", f"/payments/{transaction_id}"), "GET /payments/{id}")

    def trace(self, transaction_id: str) -> dict[str, Any]:
        """The payment's internal cascade trace (control plane; any key of its merchant)."""
        from payorch_cli.render.trace import trace_path

        return _dict(self.call("GET", trace_path(transaction_id)), "GET /_sim/payments/{id}/trace")

    def simulate(self, transaction_id: str, action: str) -> dict[str, Any]:
        return _dict(
            self.call("POST", f"/payments/{transaction_id}/simulate", {"action": action}),
            "simulate",
        )

    def balance(self) -> dict[str, Any]:
        return _dict(self.call("GET", "/me/balance"), "GET /me/balance")

    def payout_balance(self) -> dict[str, Any] | None:
        """The payout balances, or None where the server has no payouts (404)."""
        try:
            return _dict(self.call("GET", "/me/payout/balance"), "GET /me/payout/balance")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    # -- webhooks and deliveries -----------------------------------------------------------------

    def webhooks(self) -> list[dict[str, Any]]:
        data = _dict(self.call("GET", "/webhooks", query={"limit": 100}), "GET /webhooks")
        return _list(data.get("data"), "GET /webhooks data")

    def deliveries(self) -> list[dict[str, Any]]:
        """Every subscription's newest deliveries, merged newest first, each with `webhook`."""
        merged: list[dict[str, Any]] = []
        for hook in self.webhooks():
            hook_id = hook.get("id")
            if not isinstance(hook_id, str):
                continue
            data = _dict(
                self.call(
                    "GET",
                    f"/webhooks/{hook_id}/deliveries",
                    query={"limit": DELIVERIES_PER_WEBHOOK},
                ),
                "GET deliveries",
            )
            for delivery in _list(data.get("data"), "GET deliveries data"):
                merged.append({**delivery, "webhook": hook})
        merged.sort(key=lambda d: str(d.get("createdAt") or ""), reverse=True)
        return merged

    def replay(self, webhook_id: str, delivery_id: str) -> dict[str, Any]:
        return _dict(
            self.call("POST", f"/webhooks/{webhook_id}/deliveries/{delivery_id}/replay"),
            "replay",
        )

    # -- the simulated providers (control plane, design.md 1.5) ----------------------------------

    def providers(self) -> list[dict[str, Any]]:
        data = _dict(self.call("GET", "/_sim/providers"), "GET /_sim/providers")
        return _list(data.get("data"), "GET /_sim/providers data")

    def start_incident(self, provider_id: str, behaviour: str, seconds: float) -> dict[str, Any]:
        """`behaviour` on that provider from now for `seconds` of simulated time."""
        body = {"behaviour": behaviour, "durationSeconds": seconds}
        return _dict(
            self.call("POST", f"/_sim/providers/{provider_id}/incidents", body), "incident"
        )

    def end_incidents(self, provider_id: str) -> list[dict[str, Any]]:
        """End every incident of that provider now (active ones end, scheduled ones are
        cancelled): the incidents ended, each with `ended` early or cancelled."""
        path = f"/_sim/providers/{provider_id}/incidents"
        data = _dict(self.call("DELETE", path), f"DELETE {path}")
        return _list(data.get("data"), f"DELETE {path} data")

    def reset_providers(self) -> list[dict[str, Any]]:
        data = _dict(self.call("POST", "/_sim/providers/reset"), "POST /_sim/providers/reset")
        return _list(data.get("data"), "POST /_sim/providers/reset data")

    # -- the request log -------------------------------------------------------------------------

    def requests(
        self,
        *,
        limit: int = PAGE_SIZE,
        status: str | None = None,
        method: str | None = None,
        path: str | None = None,
        include_tools: bool = False,
    ) -> Page:
        """The newest logged requests the filters match (summaries, no bodies); payorch's own
        tools' requests (this TUI's among them) only with `include_tools`."""
        query = {"limit": limit, "status": status, "method": method, "path": path}
        if include_tools:
            query["includeTools"] = "true"
        data = _dict(self.call("GET", "/_sim/requests", query=query), "GET /_sim/requests")
        pagination = present.obj(data.get("pagination"))
        rows = _list(data.get("data"), "GET /_sim/requests data")
        return Page(rows, _int(pagination.get("total"), len(rows)), 0, limit)

    def request_detail(self, request_id: str) -> dict[str, Any]:
        """One logged request with its (masked) bodies."""
        return _dict(self.call("GET", f"/_sim/requests/{request_id}"), "GET /_sim/requests/{id}")
