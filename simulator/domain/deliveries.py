"""Webhook delivery records and the retry policy (pure: tables, jobs and time in; no I/O).

One delivery (`dlv_...`) per (event, subscription). Its life:

    pending --2xx--> succeeded
    pending --failure--> pending (retry job at +1m, +5m, +30m, +2h, +6h, +12h, +24h) --> failed
    pending --410 Gone--> failed, and the subscription is deactivated
    pending --refused by the egress policy (team mode: never sent)--> failed
    pending --subscription deleted or inactive when an attempt is due--> cancelled
    stored: a managed-inbox delivery, kept and listed, never sent

A replay is one more attempt of the same delivery, outside the schedule: a 2xx makes it
`succeeded` (and drops any pending retry); a failure changes nothing else (a 410 still deactivates).
The sending itself (sign with a real-time `t`, POST, time it) is `simulator.events.engine`'s job.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain.auth import Principal
from simulator.domain.errors import ApiError
from simulator.domain.ids import hex_token, unused
from simulator.domain.ports import Jobs, Table
from simulator.domain.trace import TraceLog, event_subject
from simulator.domain.webhooks import WebhookService, signing_secrets, wants
from simulator.jsonio import dumps

if TYPE_CHECKING:
    from simulator.domain.records import DeliveryAttempt, DeliveryRecord, EventRecord

# design.md 2.3: delays after the 1st, 2nd ... 7th failed attempt; the 8th failure is final.
RETRY_DELAYS: tuple[float, ...] = (60.0, 300.0, 1800.0, 7200.0, 21600.0, 43200.0, 86400.0)
RETRY_JOB = "webhook.retry"
DELIVERY_STATUSES = ("pending", "succeeded", "failed", "stored", "cancelled")
AUTOMATIC = ("initial", "retry")
RESPONSE_KEPT = 500  # characters of the endpoint's answer kept per attempt, for debugging


@dataclass(frozen=True, slots=True)
class AttemptPlan:
    """Everything one attempt needs, read under the current state (build step, pure)."""

    delivery_id: str
    webhook_id: str
    url: str
    event_type: str
    body: bytes
    secret: str
    previous_secret: str | None
    trigger: str
    # The engine signs with max(now, this): every attempt of a delivery gets a new `t`, so an
    # endpoint can tell our retry (new t) from a replayed capture (same t, same signature).
    min_timestamp: int


@dataclass(frozen=True, slots=True)
class AttemptResult:
    trigger: str
    at: float  # simulated time the attempt started: retries are scheduled from it
    sent_at: float  # wall-clock time, as in the signature
    timestamp: int  # the signature's t
    http_status: int | None
    duration_ms: float
    error: str | None
    response_body: str | None = None
    # The X-Service-Signature header sent, shown so an integrator can compare it with their check.
    signature: str | None = None
    # Refused by the egress policy, never sent: the delivery fails at once, with no retry.
    refused: bool = False

    @property
    def succeeded(self) -> bool:
        return self.http_status is not None and 200 <= self.http_status < 300


def event_body(event: EventRecord) -> bytes:
    """The raw body every attempt sends: the envelope as emitted, without internal fields."""
    return dumps({k: v for k, v in event.items() if k != "merchantId"})


class DeliveryService:
    def __init__(
        self,
        deliveries: Table[DeliveryRecord],
        events: Table[EventRecord],
        webhooks: WebhookService,
        jobs: Jobs,
        now: Callable[[], float],
        rng: random.Random | None = None,
        *,
        trace: TraceLog | None = None,
    ) -> None:
        self._table = deliveries
        self._trace = trace
        self._events = events
        self._webhooks = webhooks
        self._jobs = jobs
        self._now = now
        self._rng = rng
        self._by_webhook: dict[str, list[str]] = defaultdict(list)
        for delivery in sorted(deliveries.values(), key=lambda d: d["createdAt"]):
            self._by_webhook[delivery["webhookId"]].append(delivery["id"])

    # -- creation (called by the bus listener, inside the emitter's batch) -----------------------

    def on_event(self, event: EventRecord) -> list[tuple[str, str | None]]:
        """Record one delivery per active subscription that wants it; return those to send, as
        (delivery id, endpoint URL)."""
        scope = (event["merchantId"], event["environment"])
        now = self._now()
        to_send: list[tuple[str, str | None]] = []
        for sub in self._webhooks.in_scope(scope):
            if not sub["active"] or not wants(sub, event["type"]):
                continue
            delivery: DeliveryRecord = {
                "id": unused(lambda: "dlv_" + hex_token(self._rng, 12), self._table.get),
                "webhookId": sub["id"],
                "merchantId": event["merchantId"],
                "environment": event["environment"],
                "eventId": event["id"],
                "eventType": event["type"],
                "managed": sub["managed"],
                "status": "stored" if sub["managed"] else "pending",
                "attempts": [],
                "nextAttemptAt": None,
                "retryJobId": None,
                "cancelReason": None,
                "createdAt": now,
                "updatedAt": now,
                "deliveredAt": None,
            }
            self._table.put(delivery["id"], delivery)
            self._by_webhook[sub["id"]].append(delivery["id"])
            if not sub["managed"]:
                to_send.append((delivery["id"], sub["url"]))
            else:
                self._trace_attempt(event, delivery, url=None, attempt=None, result="stored")
        return to_send

    # -- reads ---------------------------------------------------------------------------------

    def get(self, principal: Principal, webhook_id: str, delivery_id: str) -> DeliveryRecord:
        self._webhooks.get(principal, webhook_id)  # webhook_not_found first
        delivery = self._table.get(delivery_id)
        if delivery is None or delivery["webhookId"] != webhook_id:
            raise ApiError(
                "webhook_delivery_not_found",
                f"No delivery {delivery_id} under webhook {webhook_id}.",
                param="deliveryId",
            )
        return delivery

    def page(
        self,
        principal: Principal,
        webhook_id: str,
        limit: int,
        offset: int,
        status: str | None = None,
    ) -> tuple[list[DeliveryRecord], int]:
        self._webhooks.get(principal, webhook_id)
        table = self._table
        rows: list[DeliveryRecord] = []
        total = 0
        for delivery_id in reversed(self._by_webhook.get(webhook_id, ())):
            delivery = table.get(delivery_id)
            if delivery is None or (status is not None and delivery["status"] != status):
                continue
            if offset <= total < offset + limit:
                rows.append(delivery)
            total += 1
        return rows, total

    def event_of(self, delivery: DeliveryRecord) -> dict[str, Any] | None:
        event = self._events.get(delivery["eventId"])
        return None if event is None else {k: v for k, v in event.items() if k != "merchantId"}

    def unfinished(self, job_exists: Callable[[str], bool]) -> list[tuple[str, str | None]]:
        """Deliveries to re-queue at start: pending with no retry job waiting (in flight at a
        crash, or never attempted), oldest first, as (delivery id, endpoint URL or None)."""
        urls = {
            sub_id: sub["url"]
            for sub_id in self._by_webhook
            if (sub := self._webhooks.find(sub_id))
        }
        return [
            (d["id"], urls.get(d["webhookId"]))
            for d in sorted(self._table.values(), key=lambda d: d["createdAt"])
            if d["status"] == "pending"
            and not d["managed"]
            and not ((job_id := d.get("retryJobId")) and job_exists(job_id))
        ]

    # -- attempts --------------------------------------------------------------------------------

    def find(self, delivery_id: str) -> DeliveryRecord | None:
        return self._table.get(delivery_id)

    def endpoint(self, delivery: DeliveryRecord) -> str | None:
        """Where the delivery goes now: its subscription's URL (None: a managed inbox, or gone)."""
        sub = self._webhooks.find(delivery["webhookId"])
        return None if sub is None else sub["url"]

    def plan(self, delivery_id: str, *, replay: bool = False) -> AttemptPlan | None:
        """What to send now, or None when nothing is to be sent (and why is recorded)."""
        delivery = self._table.get(delivery_id)
        if delivery is None:  # the emitting batch was rolled back
            return None
        if replay:
            trigger = "replay"
        elif delivery["status"] != "pending":
            return None
        else:
            made = any(a["trigger"] in AUTOMATIC for a in delivery["attempts"])
            trigger = "retry" if made else "initial"
        sub = self._webhooks.find(delivery["webhookId"])
        if sub is None:
            self._cancel(delivery, "subscription deleted")
            return None
        if not sub["active"]:
            self._cancel(delivery, f"subscription inactive ({sub.get('deactivatedReason')})")
            return None
        event = self._events.get(delivery["eventId"])
        if sub["managed"] or event is None:
            if trigger == "replay":
                self._append(delivery, {"trigger": trigger, "at": self._now(), "stored": True})
            elif event is None:
                self._cancel(delivery, "event no longer stored")
            else:  # switched to a managed inbox meanwhile: it lands there
                delivery["status"] = "stored"
                self._append(delivery, {"trigger": trigger, "at": self._now(), "stored": True})
            return None
        assert sub["url"] is not None  # not a managed inbox, so it has a URL
        secret, previous = signing_secrets(sub, self._now())
        last_t = max((a.get("timestamp") or 0 for a in delivery["attempts"]), default=0)
        return AttemptPlan(
            delivery_id=delivery_id,
            webhook_id=sub["id"],
            url=sub["url"],
            event_type=delivery["eventType"],
            body=event_body(event),
            secret=secret,
            previous_secret=previous,
            trigger=trigger,
            min_timestamp=last_t + 1,
        )

    def record(self, plan: AttemptPlan, result: AttemptResult) -> DeliveryRecord | None:
        """Store the attempt and decide what follows: done, retry later, or give up."""
        delivery = self._table.get(plan.delivery_id)
        if delivery is None:
            return None
        attempt: DeliveryAttempt = {
            "trigger": result.trigger,
            "at": result.at,
            "sentAt": result.sent_at,
            "timestamp": result.timestamp,
            "httpStatus": result.http_status,
            "durationMs": round(result.duration_ms, 2),
            "error": result.error,
            "responseBody": (result.response_body or "")[:RESPONSE_KEPT] or None,
            "signatureHeader": result.signature,
        }
        if result.succeeded:
            delivery.update({"status": "succeeded", "deliveredAt": result.at})
            self._drop_retry(delivery)
        elif result.http_status == 410:
            self._webhooks.deactivate(plan.webhook_id, "410 Gone")
            if delivery["status"] != "succeeded":
                delivery["status"] = "failed"
            self._drop_retry(delivery)
        elif result.refused and delivery["status"] == "pending":
            delivery["status"] = "failed"
            self._drop_retry(delivery)
        elif result.trigger in AUTOMATIC and delivery["status"] == "pending":
            made = 1 + sum(1 for a in delivery["attempts"] if a["trigger"] in AUTOMATIC)
            if made <= len(RETRY_DELAYS):
                due = result.at + RETRY_DELAYS[made - 1]
                job_id = self._jobs.schedule(RETRY_JOB, due, {"deliveryId": delivery["id"]})
                delivery.update({"nextAttemptAt": due, "retryJobId": job_id})
            else:
                delivery["status"] = "failed"
                self._drop_retry(delivery)
        event = self._events.get(delivery["eventId"])
        if event is not None:
            outcome = "succeeded" if result.succeeded else "failed"
            self._trace_attempt(event, delivery, url=plan.url, attempt=attempt, result=outcome)
        return self._append(delivery, attempt)

    # -- internals -------------------------------------------------------------------------------

    def _trace_attempt(
        self,
        event: EventRecord,
        delivery: DeliveryRecord,
        *,
        url: str | None,
        attempt: DeliveryAttempt | None,
        result: str,
    ) -> None:
        """The delivery's attempt in the trace of the payment or payout its event is about."""
        subject_id = event_subject(event)
        if self._trace is None or subject_id is None:
            return
        fields: dict[str, Any] = {
            "eventId": delivery["eventId"],
            "deliveryId": delivery["id"],
            "webhookId": delivery["webhookId"],
            "url": url,
            "result": result,
            "deliveryStatus": delivery["status"],
        }
        at = None
        if attempt is not None:
            at = attempt["at"]
            fields |= {
                "attempt": len(delivery["attempts"]) + 1,
                "trigger": attempt["trigger"],
                "httpStatus": attempt["httpStatus"],
                "error": attempt["error"],
                "nextAttemptAt": _iso(delivery.get("nextAttemptAt")),
            }
        self._trace.record({**event, "id": subject_id}, "delivery", at=at, **fields)

    def _append(self, delivery: DeliveryRecord, attempt: DeliveryAttempt) -> DeliveryRecord:
        delivery["attempts"].append(attempt)
        delivery["updatedAt"] = self._now()
        self._table.put(delivery["id"], delivery)
        return delivery

    def _drop_retry(self, delivery: DeliveryRecord) -> None:
        if job_id := delivery.get("retryJobId"):
            self._jobs.cancel(job_id)
        delivery.update({"nextAttemptAt": None, "retryJobId": None})

    def _cancel(self, delivery: DeliveryRecord, reason: str) -> None:
        if delivery["status"] == "pending":
            delivery.update(
                {"status": "cancelled", "cancelReason": reason, "updatedAt": self._now()}
            )
            self._drop_retry(delivery)
            self._table.put(delivery["id"], delivery)


def _iso(value: float | None) -> str | None:
    return None if value is None else isoformat(value)


def attempt_view(number: int, attempt: DeliveryAttempt) -> dict[str, Any]:
    return {
        "number": number,
        "trigger": attempt["trigger"],
        "at": isoformat(attempt["at"]),
        "sentAt": _iso(attempt.get("sentAt")),
        "httpStatus": attempt.get("httpStatus"),
        "durationMs": attempt.get("durationMs"),
        "error": attempt.get("error"),
        "responseBody": attempt.get("responseBody"),
        "stored": attempt.get("stored", False),
        "signatureHeader": attempt.get("signatureHeader"),
    }


def delivery_view(delivery: DeliveryRecord, event: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": delivery["id"],
        "webhookId": delivery["webhookId"],
        "eventId": delivery["eventId"],
        "eventType": delivery["eventType"],
        "status": delivery["status"],
        "managed": delivery["managed"],
        "attemptCount": len(delivery["attempts"]),
        "attempts": [attempt_view(i, a) for i, a in enumerate(delivery["attempts"], start=1)],
        "nextAttemptAt": _iso(delivery.get("nextAttemptAt")),
        "cancelReason": delivery.get("cancelReason"),
        "createdAt": isoformat(delivery["createdAt"]),
        "updatedAt": isoformat(delivery["updatedAt"]),
        "deliveredAt": _iso(delivery.get("deliveredAt")),
        "event": event,
    }
