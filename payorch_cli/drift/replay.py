"""The replay (the I/O half of drift): a fresh namespace of a payorch server, the recording's
requests sent in order with ids and credentials mapped, the simulated clock moved by the
recording's own time, payorch's events collected, and every answer handed to compare.py.

Memory: records are read one at a time (reader.py) and dropped once compared; what stays is
the id map (one entry per object the recording made), the upstream's webhooks and payorch's
events (compared at the end, object by object: events.py), and at most MAX_KEPT differences
(the rest are counted).
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from payorch_cli.drift.compare import Difference, compare_answers
from payorch_cli.drift.deliveries import Deliveries, EndpointAnswers
from payorch_cli.drift.events import Event, compare_events, object_of
from payorch_cli.drift.ids import Hint, IdMap
from payorch_cli.recording.format import instant
from payorch_cli.recording.polls import repeated_by_poll, with_next

MAX_KEPT = 1000  # differences kept for the report; more are counted
SENT_HEADERS = frozenset({"content-type", "idempotency-key", "sandbox-simulate", "accept"})
CLOCK_SLACK = 1.0  # seconds the simulated clock may lag the recording's before it is moved
QUIET = 1.0  # seconds without a new event that end the wait for payorch's last events
TRANSIENT = frozenset({429, 500, 502, 503, 504})
MADE_WAIT = 2.0  # seconds to wait for the event that names an object first seen in a path


@dataclass
class Outcome:
    """What a replay found: the figures and the differences (the first MAX_KEPT)."""

    upstream: str
    target: str
    compared: int = 0
    skipped: int = 0
    polled: int = 0  # early reads of a poll, not compared (recording/polls.py)
    differing: set[int] = field(default_factory=set)
    differences: list[Difference] = field(default_factory=list)
    total_differences: int = 0

    @property
    def matched(self) -> int:
        return self.compared - len(self.differing)

    @property
    def parity(self) -> float:
        return 1.0 if self.compared == 0 else self.matched / self.compared

    def add(self, found: Iterable[Difference]) -> None:
        for difference in found:
            self.differing.add(difference.seq)
            self.total_differences += 1
            if len(self.differences) < MAX_KEPT:
                self.differences.append(difference)


class Target:
    """A namespace of a payorch server, spoken to with http.client (raw answers, errors
    included: the client of client.py turns an error answer into an exception)."""

    def __init__(self, base_url: str, admin_key: str, *, own: bool = False) -> None:
        parts = urlsplit(base_url)
        self.base_url = base_url.rstrip("/")
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port
        self._https = parts.scheme == "https"
        self._root = parts.path.rstrip("/")
        self._admin_key = admin_key
        self._conn: http.client.HTTPConnection | None = None
        # A server of its own (the embedded one) is fresh already: its `default` namespace
        # is used, as a recording of the root paths expects (a namespace's prefix answers a
        # few errors its own way, design.md 1.6).
        self.namespace = None if own else f"drift-{secrets.token_hex(6)}"
        self.keys: list[dict[str, Any]] = []

    def _open(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=60)
        return self._conn

    def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, Any, str]:
        """(status, parsed JSON body or None, body text) of one request under `path`."""
        for attempt in (1, 2):
            conn = self._open()
            try:
                conn.request(method, self._root + path, body=body, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._conn = None
                if attempt == 2:
                    raise
        text = raw.decode("utf-8", "replace")
        try:
            return response.status, (json.loads(raw) if raw else None), text
        except ValueError:
            return response.status, None, text

    def call(self, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {key}", "X-Payorch-Tool": "drift"}
        payload = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            payload = json.dumps(body).encode()
        status, data, _ = self.send(method, path, headers, payload)
        return status, data

    def create(self) -> None:
        if self.namespace is None:
            status, data = self.call("GET", "/_sim/namespaces/default", self._admin_key)
        else:
            status, data = self.call("PUT", f"/_sim/namespaces/{self.namespace}", self._admin_key)
        if status >= 300 or not isinstance(data, dict):
            error = (data or {}).get("error", {}) if isinstance(data, dict) else {}
            raise RuntimeError(
                f"{self.base_url} refused a namespace for the replay: {status} "
                f"{error.get('code', '')} {error.get('message', '')}".rstrip()
            )
        self.keys = list(data.get("keys") or [])

    def delete(self) -> None:
        if self.namespace is None:
            return
        path = f"/_sim/namespaces/{self.namespace}"
        for key in (self._admin_key, *[str(k["secretKey"]) for k in self.keys[:1]]):
            try:
                if self.call("DELETE", path, key)[0] < 300:
                    return
            except OSError:
                return

    def prefixed(self, path: str) -> str:
        # A recorded path under a namespace of its own (`scenario run --namespace auto`) names
        # the namespace the recording made, replayed as it is.
        if self.namespace is None or path.startswith("/ns/"):
            return path
        return f"/ns/{quote(self.namespace, safe='')}{path}"

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class EventCollector:
    """payorch's events (GET /_sim/events), one stream per sandbox secret key the replay uses;
    each event is stamped with the seq of the record replayed last before it arrived."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self._streams: set[str] = set()
        self._lock = threading.Lock()
        self.events: list[Event] = []
        # Events are kept once the recording shows webhook traffic (a subscription made, or a
        # delivery recorded): a recording without any needs none, however long it is.
        self.keeping = False
        self._ids: set[str] = set()
        self._found: set[int] = set()
        self.seq = 0
        self.last_arrival = time.monotonic()

    def watch(self, key: str) -> None:
        if key in self._streams:
            return
        self._streams.add(key)
        opened = threading.Event()
        thread = threading.Thread(target=self._run, args=(key, opened), daemon=True)
        thread.start()
        opened.wait(5)

    def _run(self, key: str, opened: threading.Event) -> None:
        from payorch_cli.client import ApiError, Client

        base = self._target.base_url + self._target.prefixed("")
        client = Client(base, key, tool="drift")
        try:
            for envelope in client.stream("/_sim/events", on_open=opened.set):
                with self._lock:
                    self.last_arrival = time.monotonic()
                    event_id = str(envelope.get("id"))
                    if not self.keeping or event_id in self._ids:
                        continue
                    self._ids.add(event_id)
                    self.events.append(Event(self.seq, str(envelope.get("type")), envelope))
        except (ApiError, OSError, ValueError):
            pass
        finally:
            opened.set()

    def find(self, kind: str, subject: str | None, limit: float = 2.0) -> Event | None:
        """payorch's event of type `kind` about `subject` (payorch's id; None: an object the
        replay has not seen, then the first such event not found before), waiting up to
        `limit` seconds for it to arrive."""
        deadline = time.monotonic() + limit
        while True:
            with self._lock:
                for event in self.events:
                    if event.type != kind or id(event) in self._found:
                        continue
                    if subject is None or object_of(event.body) == subject:
                        self._found.add(id(event))
                        return event
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def made(self, upstream_id: str, answer: dict[str, Any], ids: IdMap) -> str | None:
        """payorch's id for an object the recording first names in a request path (its id came
        in a webhook to the user's own endpoint, which the proxy never sees: a claim's id from
        `claim.opened`): the object of one of payorch's events of the same kind (the id's
        prefix) that names the same objects as the recorded answer does, through the id map."""
        kind = re.match(r"[A-Za-z]+[-_]", upstream_id)
        related = {
            name: ids.values[value]
            for name, value in answer.items()
            if name != "id" and isinstance(value, str) and value in ids.values
        }
        if kind is None or not related:
            return None
        deadline = time.monotonic() + MADE_WAIT
        while True:
            with self._lock:
                for event in self.events:
                    data = event.body.get("data") if isinstance(event.body, dict) else None
                    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
                        continue
                    same = all(data.get(name) == value for name, value in related.items())
                    if same and data["id"].startswith(kind.group(0)):
                        return str(data["id"])
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def drain(self, limit: float = 5.0) -> list[Event]:
        """The events, once none has arrived for QUIET seconds (or after `limit`)."""
        started = time.monotonic()
        while time.monotonic() - started < limit:
            time.sleep(0.1)
            with self._lock:
                if time.monotonic() - self.last_arrival >= QUIET:
                    break
        with self._lock:
            return list(self.events)


def _where(request: dict[str, Any]) -> str:
    return f"{request.get('method', '?')} {request.get('path', '?')}"


@dataclass
class _Clock:
    """Keeps payorch's simulated clock up with the recording's wall-clock time."""

    target: Target
    ids: IdMap
    first: float | None = None
    started: float = 0.0
    advanced: float = 0.0

    def follow(self, at: float | None) -> None:
        if at is None:
            return
        if self.first is None:
            self.first, self.started = at, time.monotonic()
            return
        behind = (at - self.first) - (time.monotonic() - self.started + self.advanced)
        key = self.ids.any_sandbox_secret()
        if behind > CLOCK_SLACK and key is not None:
            path = self.target.prefixed("/_sim/clock/advance")
            if self.target.call("POST", path, key, {"seconds": round(behind, 3)})[0] < 300:
                self.advanced += behind


@dataclass
class _Subscriptions:
    """Which event types the recording's webhook receiver subscribed to (None: all)."""

    types: set[str] | None = field(default_factory=set)

    def note(self, request: dict[str, Any], status: int) -> bool:
        """Take in an exchange; True when it made a subscription."""
        body = request.get("body")
        path = str(request.get("path", ""))
        if request.get("method") != "POST" or not path.endswith("/webhooks") or status >= 300:
            return False
        if not isinstance(body, dict) or not body.get("url"):
            return False
        wanted = body.get("events")
        if not isinstance(wanted, list) or "*" in wanted or self.types is None:
            self.types = None
        else:
            self.types.update(str(t) for t in wanted)
        return True

    def keep(self, event: Event) -> bool:
        return self.types is None or event.type in self.types


class Replay:
    """One replay of one recording's records against one target namespace."""

    def __init__(
        self, target: Target, upstream: str, answers: EndpointAnswers | None = None
    ) -> None:
        self.target = target
        self.ids = IdMap(target.keys)
        self.deliveries = Deliveries(target, self.ids, answers or EndpointAnswers())
        self.events = EventCollector(target)
        self.clock = _Clock(target, self.ids)
        self.outcome = Outcome(upstream, target.base_url)
        self.upstream_events: list[Event] = []
        self.delivered: set[str] = set()
        self.subscriptions = _Subscriptions()

    def run(self, records: Iterable[dict[str, Any]], progress: Callable[[int], None]) -> Outcome:
        for record, following in with_next(records):
            kind = record.get("kind")
            if kind == "end":
                continue
            self.clock.follow(instant(record.get("at")))
            seq = int(record.get("seq") or 0)
            if kind == "webhook":
                self.webhook(seq, record)
            elif repeated_by_poll(record, following):
                self.outcome.polled += 1
            else:
                self.exchange(seq, record)
            self.events.seq = seq
            progress(seq)
        self.finish()
        return self.outcome

    def webhook(self, seq: int, record: dict[str, Any]) -> None:
        """An upstream delivery; a retry or a replay of an event already delivered (the same
        event id) is the same event, compared once."""
        body = record.get("body")
        event_id = body.get("id") if isinstance(body, dict) else None
        if isinstance(event_id, str):
            if event_id in self.delivered:
                return
            self.delivered.add(event_id)
        kind = str(record.get("eventType") or "")
        self.upstream_events.append(Event(seq, kind, body))
        self.outcome.compared += 1
        if not self.events.keeping:
            self.events.keeping = True
            return
        # Ids first seen in a webhook (a claim's id in claim.opened) are learnt now, from
        # payorch's event of the same type about the same object, for the requests to come.
        subject = object_of(body) or ""
        mine = self.events.find(kind, self.ids.values.get(subject))
        if mine is not None:
            self.ids.learn(body, mine.body)

    def exchange(self, seq: int, record: dict[str, Any]) -> None:
        request, response = record.get("request") or {}, record.get("response")
        if not record.get("comparable", True) or response is None:
            self.outcome.skipped += 1
            return
        headers, maker = self._headers(request, response)
        body, to_receiver = self._body(seq, request)
        self._learn_made(request, response)
        path, unknown = self.ids.path(str(request.get("path") or "/"))
        query = self.ids.query(str(request.get("query") or ""))
        target = self.target.prefixed(path) + (f"?{query}" if query else "")
        self.deliveries.settle()
        method = str(request.get("method"))
        status, answer, text = self.target.send(method, target, headers, body)
        if to_receiver and status < 300:
            auth = headers.get("authorization", "").removeprefix("Bearer ")
            self.deliveries.subscribed(seq, response.get("body"), answer, auth)
        elif method == "DELETE" and "/webhooks/" in path and status < 300:
            self.deliveries.unsubscribed(path)
        fix = "payorch"
        if unknown or response.get("status") in TRANSIENT or request.get("truncated"):
            fix = "recording"
        mine = {"status": status, "body": answer, "bodyText": None if answer else text}
        self.outcome.compared += 1
        self.outcome.add(compare_answers(seq, _where(request), response, mine, fix))
        self.ids.learn(response.get("body"), answer, maker)
        if self.subscriptions.note(request, status):
            self.events.keeping = True

    def _learn_made(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        """An id the request's path names for the first time, told by payorch's events."""
        answer = response.get("body")
        made = answer.get("id") if isinstance(answer, dict) else None
        path = str(request.get("path") or "")
        if not isinstance(answer, dict) or not isinstance(made, str):
            return
        if made not in self.ids.values and made in path.split("/"):
            found = self.events.made(made, answer, self.ids)
            if found is not None:
                self.ids.values[made] = found

    def _headers(
        self, request: dict[str, Any], response: dict[str, Any]
    ) -> tuple[dict[str, str], str | None]:
        """The headers to send (credentials mapped) and the key placeholder that makes the
        request's objects (None when its Authorization names none)."""
        recorded = {
            name: str(value)
            for name, value in (request.get("headers") or {}).items()
            if name in SENT_HEADERS or name == "authorization"
        }
        hint = Hint(response.get("body"), int(response.get("status") or 0))
        auth = recorded.get("authorization", "")
        maker = self.ids.introduce(
            f"{auth} {json.dumps(request.get('body'))}", str(request.get("path")), hint
        )
        maker = maker if maker and maker in auth else None
        headers = {name: self.ids.text(value) for name, value in recorded.items()}
        headers["X-Payorch-Tool"] = "drift-replay"
        for name, value in headers.items():
            if name == "authorization" and value.startswith("Bearer sk_test_"):
                self.events.watch(value.removeprefix("Bearer "))
        return headers, maker

    def _body(self, seq: int, request: dict[str, Any]) -> tuple[bytes | None, bool]:
        """The body to send (ids mapped), and whether it points a subscription at drift's
        receiver (a webhook URL is rewritten to it)."""
        if request.get("body") is None:
            text = request.get("bodyText")
            return (self.ids.text(str(text)).encode() if text else None), False
        sent = self.ids.apply(request["body"])
        subscription = "/webhooks" in str(request.get("path", ""))
        if subscription and isinstance(sent, dict) and isinstance(sent.get("url"), str):
            sent["url"] = self.deliveries.url_for(seq)
            return json.dumps(sent).encode(), True
        return json.dumps(sent).encode(), False

    def finish(self) -> None:
        try:
            if not self.upstream_events:
                # No delivery reached the recorder: its receiver was not subscribed (deliveries
                # went straight to the user's endpoint), so there is nothing to compare with.
                return
            events = [e for e in self.events.drain() if self.subscriptions.keep(e)]
            self.outcome.add(compare_events(self.upstream_events, events, self.ids))
            self.outcome.differences.sort(key=lambda d: d.seq)
        finally:
            self.deliveries.close()
