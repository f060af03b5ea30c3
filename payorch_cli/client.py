"""The CLI's one HTTP client: talks to any payorch server, returns plain data, raises ApiError.

Standard library only (`http.client`): `payorch --help` must not pay for importing aiohttp, and
sequential calls are cheaper this way (design.md 2.5). One persistent connection per Client; a
dropped keep-alive connection is reopened once. Also here: `post_raw`, the plain POST that
`payorch webhooks audit` sends to the user's own endpoint.

Every request says which payorch tool made it (`X-Payorch-Tool`): the request log, `record` and
coverage leave tagged requests out unless asked (docs/decisions.md). A client tags its reads
(GET) with its `tool`, `cli` unless told otherwise; its writes only with `tag_writes` (a tool's own
housekeeping, like `listen`'s subscription), since a write a command makes is what the user asked
for. `tool=None` tags nothing (the pytest fixture: the user's own test).
"""

from __future__ import annotations

import http.client
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from payorch import bounded
from payorch.vocabulary import API_PREFIX

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_API_KEY = "sk_test_19g744zrbw5buqxqpxp5w4gj"  # the fixture sandbox secret key
BASE_URL_ENV = "PAYORCH_BASE_URL"
API_KEY_ENV = "PAYORCH_API_KEY"
NAMESPACE_ENV = "PAYORCH_NAMESPACE"  # read by the commands (options.py), not by every Client
DEFAULT_NAMESPACE = "default"
TOOL_HEADER = "X-Payorch-Tool"  # simulator/domain/requestlog.py keeps it
# A scenario step's `retry`: the attempt's number, from 2 on. Drift and the proxy's scenario take
# a poll at its last read (payorch_cli/recording/polls.py).
POLL_HEADER = "X-Payorch-Poll"
READS = frozenset({"GET", "HEAD"})


class ApiError(Exception):
    """An error answer of the server (its envelope), or `connection_failed` (status 0)."""

    def __init__(
        self,
        code: str,
        message: str,
        status: int,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.details = details or {}
        self.request_id = request_id


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    body: bytes
    duration_ms: float


def _connection(url: str, timeout: float | None) -> tuple[http.client.HTTPConnection, str]:
    """A connection for `url` and the request target (path + query) to send."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError("invalid_url", f"Not an http(s) URL: {url}", 0)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return cls(parts.hostname, parts.port, timeout=timeout), target


class Client:
    """`namespace`: every request goes under `/ns/{name}`, and a key of
    `default` (the fixture key by default) is swapped, on first use, for its counterpart in that
    namespace (asked of the server: a namespace's keys cannot be computed from its name)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        *,
        tool: str | None = "cli",
        tag_writes: bool = False,
        namespace: str | None = None,
    ) -> None:
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key or os.environ.get(API_KEY_ENV) or DEFAULT_API_KEY
        self.given_key = self._api_key  # before a namespace's swap
        self.timeout = timeout
        self.tool = tool
        self.tag_writes = tag_writes
        self._conn: http.client.HTTPConnection | None = None
        self._root = self._prefix = urlsplit(self.base_url).path.rstrip("/")
        self.namespace = None if namespace == DEFAULT_NAMESPACE else namespace
        self._key_resolved = self.namespace is None
        if self.namespace is not None:
            self._prefix += f"/ns/{quote(self.namespace, safe='')}"

    @property
    def api_key(self) -> str:
        if not self._key_resolved:
            self._key_resolved = True
            self._api_key = self._namespace_key(self._api_key)
        return self._api_key

    @api_key.setter
    def api_key(self, value: str) -> None:
        self._api_key, self._key_resolved = value, True

    def _namespace_key(self, key: str) -> str:
        """`key`'s counterpart in the namespace when `key` is one of `default`'s (the same
        merchant, shop, environment and kind); any other key as it is."""
        try:
            mine = self._root_get("/_sim/namespaces/default", key)
        except ApiError as exc:
            if exc.status == 0:
                raise
            # Not a sandbox secret key of `default` (on a team server `default` is 404 to a
            # namespace's own key): sent as given.
            return key
        try:
            theirs = self._root_get(f"/_sim/namespaces/{quote(str(self.namespace), safe='')}", key)
        except ApiError as exc:
            if exc.status == 0 or exc.code == "namespace_not_found":
                raise
            return key
        for row, counterpart in zip(mine.get("keys", ()), theirs.get("keys", ()), strict=False):
            for field in ("secretKey", "publishableKey"):
                if row.get(field) == key:
                    return str(counterpart[field])
        return key

    def _root_get(self, path: str, key: str) -> Any:
        """A GET outside the namespace's prefix, with `key`."""
        saved, saved_key, saved_resolved = self._prefix, self._api_key, self._key_resolved
        self._prefix, self._api_key, self._key_resolved = self._root, key, True
        try:
            return self.request("GET", path)
        finally:
            self._prefix, self._api_key, self._key_resolved = saved, saved_key, saved_resolved

    # -- transport ---------------------------------------------------------------------------------

    def _url_path(self, path: str, query: dict[str, Any] | None) -> str:
        # The control plane lives outside the versioned API (design.md 1.3).
        full = path if path.startswith("/_sim") else API_PREFIX + path
        if query:
            full += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        return self._prefix + full

    def _open(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn, _ = _connection(self.base_url, self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """One call; `headers` adds request headers (Idempotency-Key, Sandbox-Simulate...)."""
        target = self._url_path(path, query)
        payload = None if body is None else json.dumps(body).encode()
        headers = {
            **(headers or {}),
            "Authorization": f"Bearer {self.api_key}",
            "Accept": "application/json",
        }
        if payload is not None:
            headers["Content-Type"] = "application/json"
        self.tag(method, headers)
        try:
            response, raw = self._keepalive(method, target, payload, headers)
        except http.client.HTTPException as exc:  # a truncated or garbled answer
            self.close()
            raise ApiError("bad_response", f"{self.base_url} answered badly: {exc!r}", 0) from None
        try:
            data = bounded.json_loads(raw) if raw else None
        except ValueError:
            raise ApiError(
                "bad_response",
                f"{method} {target} answered {response.status} with a body that is not JSON: "
                f"{raw[:120]!r}",
                response.status,
            ) from None
        if response.status >= 400:
            error = (data or {}).get("error", {}) if isinstance(data, dict) else {}
            raise ApiError(
                error.get("code", f"http_{response.status}"),
                error.get("message", raw.decode("utf-8", "replace")[:200]),
                response.status,
                error.get("details"),
                error.get("requestId"),
            )
        return data

    def tag(self, method: str, headers: dict[str, str]) -> None:
        """Add the tool's tag to a request's headers, if this client tags this method."""
        if self.tool is not None and (self.tag_writes or method in READS):
            headers[TOOL_HEADER] = self.tool

    def _keepalive(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[http.client.HTTPResponse, bytes]:
        """One exchange on the kept-alive connection, reopened once if the server dropped it."""
        for attempt in (1, 2):
            conn = self._open()
            try:
                conn.request(method, target, body=body, headers=headers)
                response = conn.getresponse()
                return response, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                if attempt == 2:
                    raise self._unreachable(exc) from None
            except OSError as exc:
                self.close()
                raise self._unreachable(exc) from None
        raise AssertionError("unreachable")

    def _unreachable(self, exc: Exception) -> ApiError:
        return ApiError("connection_failed", f"Cannot reach {self.base_url}: {exc}", 0)

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query or None)

    def post(self, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        return self.request("POST", path, body, headers=headers)

    # -- namespaces (/_sim/namespaces: outside any namespace's prefix) --------------------------

    def namespace_call(self, method: str, name: str | None = None, body: Any = None) -> Any:
        path = "/_sim/namespaces" + (f"/{quote(name, safe='')}" if name is not None else "")
        saved, self._prefix = self._prefix, self._root
        try:
            return self.request(method, path, body)
        finally:
            self._prefix = saved

    # -- saved states (/_sim/state) ------------------------------------------------------------

    def list_states(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/_sim/state")["data"])

    def save_state(self, name: str, *, overwrite: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name}
        if overwrite:
            body["overwrite"] = True
        return dict(self.request("POST", "/_sim/state", body))

    def restore_state(self, name: str) -> dict[str, Any]:
        # Quoted whole: a name with a separator reaches the server, which names what is wrong.
        return dict(self.request("POST", f"/_sim/state/{quote(name, safe='')}/restore"))

    def delete_state(self, name: str) -> None:
        self.request("DELETE", f"/_sim/state/{quote(name, safe='')}")

    # -- webhooks ------------------------------------------------------------------------------

    def create_webhook(
        self, url: str | None, events: list[str] | str, description: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"events": events}
        if url is not None:
            body["url"] = url
        if description is not None:
            body["description"] = description
        return self.request("POST", "/webhooks", body)

    def update_webhook(self, webhook_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", f"/webhooks/{quote(webhook_id, safe='')}", changes)

    def delete_webhook(self, webhook_id: str) -> dict[str, Any]:
        return self.request("DELETE", f"/webhooks/{webhook_id}")

    def list_webhooks(self, limit: int = 100, offset: int = 0) -> dict[str, Any]:
        return self.get("/webhooks", limit=limit, offset=offset)

    def webhook_deliveries(self, webhook_id: str, limit: int = 100) -> list[dict[str, Any]]:
        return self.get(f"/webhooks/{webhook_id}/deliveries", limit=limit)["data"]

    def replay_delivery(self, webhook_id: str, delivery_id: str) -> dict[str, Any]:
        return self.post(f"/webhooks/{webhook_id}/deliveries/{delivery_id}/replay")

    # -- server-sent event streams ---------------------------------------------------------------

    def events(self) -> Iterator[dict[str, Any]]:
        """GET /_sim/events as an iterator of envelopes; blocks between events."""
        return self.stream("/_sim/events")

    def stream(
        self,
        path: str,
        query: dict[str, Any] | None = None,
        on_open: Callable[[], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """A server-sent-events endpoint as an iterator of its `data:` objects; blocks between
        them and ends when the server ends the stream. `on_open` is called once it is open (an
        error answer raises ApiError instead)."""
        conn, _ = _connection(self.base_url, timeout=None)  # an event may be long in coming
        try:
            headers = {"Authorization": f"Bearer {self.api_key}"}
            self.tag("GET", headers)
            conn.request("GET", self._url_path(path, query), headers=headers)
            response = conn.getresponse()
            if response.status >= 400:
                raw = response.read()
                try:
                    error = bounded.json_loads(raw or b"{}").get("error", {})
                except (ValueError, AttributeError):
                    error = {}
                raise ApiError(
                    error.get("code", f"http_{response.status}"),
                    error.get("message", raw.decode("utf-8", "replace")[:200]),
                    response.status,
                    error.get("details"),
                    error.get("requestId"),
                )
            if on_open is not None:
                on_open()
            while line := response.readline():
                if line.startswith(b"data: "):
                    yield json.loads(line[6:])
        except OSError as exc:
            raise self._unreachable(exc) from None
        finally:
            conn.close()


def post_raw(url: str, body: bytes, headers: dict[str, str], timeout: float = 10.0) -> RawResponse:
    """POST exactly these bytes and headers to any URL; the status, body and time it took.

    Nothing answering at the URL (refused, no such host, no connection within `timeout`) is
    `connection_failed`; a connection the endpoint drops is `connection_dropped`; an answer
    that does not come within `timeout` raises TimeoutError."""
    conn, target = _connection(url, timeout)
    started = time.perf_counter()
    try:
        try:
            conn.connect()
        except OSError as exc:
            raise ApiError("connection_failed", f"Cannot reach {url}: {exc}", 0) from None
        try:
            conn.request("POST", target, body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            message = f"{url} dropped the connection: {exc!r}"
            raise ApiError("connection_dropped", message, 0) from None
    finally:
        conn.close()
    return RawResponse(response.status, raw, (time.perf_counter() - started) * 1000)
