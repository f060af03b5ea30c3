"""payorch's webhook deliveries during a replay: where they go, what they are answered, and the
wait for those in flight before the next request.

Where: every subscription the replay makes delivers to a loopback receiver of drift's (the
recorded URL, the proxy's receiver or the user's endpoint, is not running during a replay), at
a path of its own (`/hooks/<seq of the request that set the URL>`).

What it answers: what the recording says the user's endpoint answered. Deliveries to the
user's endpoint never pass the proxy, but the upstream's own reads tell their attempts (a
delivery list's `attempts`, a trace's `delivery` entries) and a delivery to the proxy's receiver
carries the status it was forwarded with. A first pass over the recording (`EndpointAnswers`)
keeps, for the deliveries that were not answered 2xx only, each attempt's status, keyed by the
upstream subscription, event type and object; an attempt the recording shows no failure for is
answered 200. Without this a retried delivery (an endpoint answering 503) read back one attempt
where the upstream had two.

The wait: payorch records a delivery with the event and sends it a moment later. The upstream's
deliveries had the user's code's pace to land before the next request (a scenario waits for the
event before it reads the trace); a replay sends its next request at once. So before each
request, while the replay has subscriptions, it waits (up to SETTLE_LIMIT) until no delivery of
theirs is still without its first attempt: the trace, the delivery list and the simulated
instant each attempt is stamped with are then those of the recording.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from payorch_cli.drift.events import object_of

if TYPE_CHECKING:
    from payorch_cli.drift.ids import IdMap


class Target(Protocol):
    """What the wait asks of the replay's target (replay.py's `Target`, which imports this)."""

    def prefixed(self, path: str) -> str: ...

    def call(self, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]: ...


# A delivery to the proxy's receiver does not name its subscription: its answers are kept
# under this key and used for any subscription.
ANY_HOOK = "*"
SETTLE_LIMIT = 3.0  # seconds a request waits for deliveries in flight
SETTLE_POLL = 0.02
# A status the endpoint never answered with (a timeout, a refused connection): the receiver
# closes the connection without an answer, so payorch records an attempt with an error.
NO_ANSWER = 0

AnswerKey = tuple[str, str, str]  # (upstream subscription id or ANY_HOOK, event type, object)


def _status(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else NO_ANSWER


class EndpointAnswers:
    """What the user's endpoint answered to each attempt of the deliveries it did not accept
    at once, read from the recording (see the module's docstring)."""

    def __init__(self) -> None:
        self.statuses: dict[AnswerKey, dict[int, int]] = {}
        self._arrivals: dict[str, int] = defaultdict(int)  # upstream event id -> deliveries

    @classmethod
    def read(cls, lines: Iterable[str]) -> EndpointAnswers:
        """One pass over the recording's lines; only those that can tell an attempt are
        parsed (a delivery list, a trace, a replay's answer, a delivery to the proxy)."""
        answers = cls()
        for line in lines:
            if '"attempts"' in line or '"delivery"' in line or '"webhook"' in line:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    answers.take(record)
        return answers

    def take(self, record: dict[str, Any]) -> None:
        if record.get("kind") == "webhook":
            self._forwarded(record)
            return
        response = record.get("response")
        if isinstance(response, dict):
            self._walk(response.get("body"))

    def _keep(self, key: AnswerKey, number: int, status: int) -> None:
        if not 200 <= status < 300 or key in self.statuses:
            self.statuses.setdefault(key, {})[number] = status

    def _forwarded(self, record: dict[str, Any]) -> None:
        body = record.get("body")
        event_id = body.get("id") if isinstance(body, dict) else None
        forwarded = record.get("forwarded")
        if not isinstance(event_id, str) or not isinstance(forwarded, dict):
            return
        self._arrivals[event_id] += 1
        key = (ANY_HOOK, str(record.get("eventType") or ""), object_of(body) or "")
        self._keep(key, self._arrivals[event_id], _status(forwarded.get("status")))

    def _walk(self, value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                self._walk(item)
        elif isinstance(value, dict):
            if isinstance(value.get("attempts"), list) and isinstance(value.get("event"), dict):
                self._delivery(value)
            elif isinstance(value.get("entries"), list):
                self._trace(value)
            else:
                for item in value.values():
                    if isinstance(item, list | dict):
                        self._walk(item)

    def _delivery(self, delivery: dict[str, Any]) -> None:
        event = delivery["event"]
        key = (str(delivery.get("webhookId")), str(event.get("type")), object_of(event) or "")
        for attempt in delivery["attempts"]:
            if isinstance(attempt, dict) and isinstance(attempt.get("number"), int):
                self._keep(key, attempt["number"], _status(attempt.get("httpStatus")))

    def _trace(self, trace: dict[str, Any]) -> None:
        entries = [e for e in trace["entries"] if isinstance(e, dict)]
        types = {
            e.get("eventId"): e.get("type") for e in entries if e.get("kind") == "event_emitted"
        }
        subject = str(trace.get("id"))
        for entry in entries:
            if entry.get("kind") == "delivery" and isinstance(entry.get("attempt"), int):
                key = (str(entry.get("webhookId")), str(types.get(entry.get("eventId"))), subject)
                self._keep(key, entry["attempt"], _status(entry.get("httpStatus")))

    def status(self, hook: str, event_type: str, subject: str, number: int) -> int:
        """The status for attempt `number` of a delivery (upstream ids); 200 when the
        recording shows no other."""
        for key in ((hook, event_type, subject), (ANY_HOOK, event_type, subject)):
            if key in self.statuses:
                return self.statuses[key].get(number, 200)
        return 200


class Receiver:
    """The loopback endpoint the replay's subscriptions deliver to; `answer(tag, body)` says
    the status of each delivery (NO_ANSWER: the connection is closed unanswered)."""

    def __init__(self, answer: Callable[[str, Any], int]) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                status = answer(self.path.rsplit("/", 1)[-1], body)
                if status == NO_ANSWER:
                    self.close_connection = True
                    return
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Deliveries:
    """The replay's side of webhook deliveries: the receiver, its answers, the settle wait."""

    def __init__(self, target: Target, ids: IdMap, answers: EndpointAnswers) -> None:
        self._target = target
        self._ids = ids
        self._answers = answers
        self._receiver: Receiver | None = None
        self._tags: dict[str, str] = {}  # receiver path tag -> upstream subscription id
        self._hooks: dict[str, str] = {}  # payorch subscription id -> the key that made it
        self._attempts: dict[tuple[str, str], int] = defaultdict(int)
        self._stuck: set[str] = set()  # deliveries that never started (a paused subscription)
        self._lock = threading.Lock()

    def url_for(self, seq: int) -> str:
        if self._receiver is None:
            self._receiver = Receiver(self._answer)
        return f"{self._receiver.url}/{seq}"

    def subscribed(self, seq: int, upstream: Any, payorch: Any, key: str) -> None:
        """A request that set a subscription's URL to the receiver was answered."""
        if isinstance(upstream, dict) and isinstance(upstream.get("id"), str):
            self._tags[str(seq)] = upstream["id"]
        if isinstance(payorch, dict) and isinstance(payorch.get("id"), str):
            self._hooks[payorch["id"]] = key

    def unsubscribed(self, path: str) -> None:
        self._hooks.pop(path.rstrip("/").rsplit("/", 1)[-1], None)

    def _answer(self, tag: str, body: Any) -> int:
        event_id = str(body.get("id")) if isinstance(body, dict) else ""
        with self._lock:
            self._attempts[(tag, event_id)] += 1
            number = self._attempts[(tag, event_id)]
        kind = str(body.get("type")) if isinstance(body, dict) else ""
        subject = self._upstream_id(object_of(body) or "")
        return self._answers.status(self._tags.get(tag, ""), kind, subject, number)

    def _upstream_id(self, payorch_id: str) -> str:
        """The upstream id payorch's `payorch_id` stands for, among the few objects whose
        deliveries the recording shows answered other than 2xx (all that matter here)."""
        for _, _, subject in list(self._answers.statuses):
            if self._ids.values.get(subject) == payorch_id:
                return subject
        return payorch_id

    def settle(self) -> None:
        """Wait until every delivery of the replay's subscriptions has had its first attempt
        (see the module's docstring), for SETTLE_LIMIT seconds at most."""
        if not self._hooks:
            return
        deadline = time.monotonic() + SETTLE_LIMIT
        waiting = self._not_started()
        while waiting and time.monotonic() < deadline:
            time.sleep(SETTLE_POLL)
            waiting = self._not_started()
        self._stuck |= waiting

    def _not_started(self) -> set[str]:
        found: set[str] = set()
        for hook, key in list(self._hooks.items()):
            path = self._target.prefixed(f"/api/v1/webhooks/{hook}/deliveries?status=pending")
            status, page = self._target.call("GET", path, key)
            rows = page.get("data") if status < 300 and isinstance(page, dict) else None
            for row in rows if isinstance(rows, list) else []:
                if isinstance(row, dict) and not row.get("attempts"):
                    found.add(str(row.get("id")))
        return found - self._stuck

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.close()
