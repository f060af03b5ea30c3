"""Webhook subscriptions: validation, CRUD and secret rotation (pure: tables, jobs and time in).

Scope: a subscription belongs to one merchant and one environment, whichever of the merchant's
credentials created it (events carry no shop, so a shop-level scope would have nothing to filter
on). Another merchant's or environment's id is `webhook_not_found`, as an unknown one.
"""

from __future__ import annotations

import ipaddress
import random
import re
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from payorch.vocabulary import EVENT_TYPES
from simulator.clock import isoformat
from simulator.domain.auth import Principal
from simulator.domain.errors import ApiError, issues_error
from simulator.domain.ids import hex_token, unused, urlsafe_token
from simulator.domain.ports import Jobs, Table

if TYPE_CHECKING:
    from simulator.domain.records import WebhookSubscriptionRecord

# `*` subscribes to every event type, including future ones.
ALL_EVENTS = "*"
SECRET_PREFIX = "whsec_"
ROTATION_GRACE_SECONDS = 86_400.0
MAX_DESCRIPTION = 240
MAX_URL = 2048
CREATE_FIELDS = frozenset({"url", "events", "description"})
UPDATE_FIELDS = frozenset({"url", "events", "active", "description"})
SECRET_EXPIRY_JOB = "webhook.secret_expire"


SECRET_PATTERN = re.compile(r"whsec_[A-Za-z0-9_-]{20,200}")


def new_secret(rng: random.Random | None = None) -> str:
    """A fresh `whsec_` signing secret, from the app's generator: the OS's CSPRNG on every
    `serve` (unpredictable), seeded only in tests (reproducible answers)."""
    return SECRET_PREFIX + urlsafe_token(rng, 32)


def _invalid(param: str, message: str, **details: Any) -> ApiError:
    return ApiError(
        "invalid_request",
        message,
        param=param,
        details={"issues": [{"path": param, "message": message}], **details},
    )


def _reject_unknown(body: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ApiError(
            "invalid_request",
            f"Unknown field(s): {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}.",
            param=unknown[0],
            details={"issues": [{"path": key, "message": "unknown field"} for key in unknown]},
        )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: object, environment: str) -> str:
    """design.md 1.4: https anywhere; plain http only to a loopback host, and only in sandbox."""
    if not isinstance(url, str) or not url.strip():
        raise _invalid("url", "`url` must be a non-empty string (omit it for a managed inbox).")
    if len(url) > MAX_URL:
        raise _invalid("url", f"`url` is longer than {MAX_URL} characters.")
    parts = urlsplit(url.strip())
    try:
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        host = None
    if parts.scheme not in ("http", "https") or not host:
        raise _invalid("url", "`url` must be an absolute http(s) URL with a host.")
    if parts.scheme == "http":
        if environment != "sandbox":
            raise _invalid("url", "Production webhook URLs must use https://.")
        if not is_loopback(host):
            raise _invalid(
                "url",
                "Plain http:// is allowed only to a loopback host (127.0.0.0/8, localhost, "
                "[::1]); use https:// for any other host.",
            )
    return url.strip()


def check_events(value: object) -> list[str]:
    if value == ALL_EVENTS:
        return [ALL_EVENTS]
    if not isinstance(value, list) or not value:
        raise _invalid(
            "events",
            '`events` must be a non-empty array of event names, or ["*"] for all.',
            validEvents=list(EVENT_TYPES),
        )
    issues: list[dict[str, str]] = []
    for index, name in enumerate(value):
        path = f"events[{index}]"
        if not isinstance(name, str):
            issues.append({"path": path, "message": "must be a string"})
        elif name == ALL_EVENTS and len(value) > 1:
            issues.append({"path": path, "message": "`*` must be the only entry"})
        elif name != ALL_EVENTS and name not in EVENT_TYPES:
            issues.append({"path": path, "message": f"unknown event `{name}`"})
    if issues:
        raise issues_error(issues, param="events", validEvents=list(EVENT_TYPES))
    return list(dict.fromkeys(value))  # de-duplicated, order kept


def check_description(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _invalid("description", "`description` must be a string or null.")
    if len(value) > MAX_DESCRIPTION:
        raise _invalid("description", f"`description` is longer than {MAX_DESCRIPTION} chars.")
    return value


def wants(subscription: WebhookSubscriptionRecord, event_type: str) -> bool:
    events = subscription["events"]
    return ALL_EVENTS in events or event_type in events


def signing_secrets(subscription: WebhookSubscriptionRecord, now: float) -> tuple[str, str | None]:
    """(current, previous-if-still-in-grace): the keys of v1 and v0."""
    previous = subscription.get("previousSecret")
    expires = subscription.get("previousSecretExpiresAt")
    if previous is not None and expires is not None and now < expires:
        return subscription["secret"], previous
    return subscription["secret"], None


def subscription_view(
    sub: WebhookSubscriptionRecord, base_url: str, *, secret: str | None = None
) -> dict[str, Any]:
    # A managed inbox "receives" into the delivery list, so that list is its URL.
    url = sub["url"] or f"{base_url.rstrip('/')}/api/v1/webhooks/{sub['id']}/deliveries"
    view: dict[str, Any] = {
        "id": sub["id"],
        "url": url,
        "events": list(sub["events"]),
        "active": sub["active"],
        "description": sub.get("description"),
        "managed": sub["managed"],
        "createdAt": isoformat(sub["createdAt"]),
        "updatedAt": isoformat(sub["updatedAt"]),
    }
    if sub.get("deactivatedReason") and not sub["active"]:
        view["deactivatedReason"] = sub["deactivatedReason"]
    if (expires := sub.get("previousSecretExpiresAt")) is not None:
        view["previousSecretExpiresAt"] = isoformat(expires)
    if secret is not None:
        view["secret"] = secret
    return view


class WebhookService:
    def __init__(
        self,
        subscriptions: Table[WebhookSubscriptionRecord],
        jobs: Jobs,
        now: Callable[[], float],
        rng: random.Random | None = None,
    ) -> None:
        self._table = subscriptions
        self._jobs = jobs
        self._now = now
        self._rng = rng
        # Creation order per (merchant, environment); ids of rolled-back creations are skipped.
        self._by_scope: dict[tuple[str, str], list[str]] = defaultdict(list)
        for sub in sorted(subscriptions.values(), key=lambda s: s["createdAt"]):
            self._by_scope[(sub["merchantId"], sub["environment"])].append(sub["id"])

    # -- reads ---------------------------------------------------------------------------------

    def in_scope(self, scope: tuple[str, str]) -> list[WebhookSubscriptionRecord]:
        table = self._table
        return [s for sid in self._by_scope.get(scope, ()) if (s := table.get(sid)) is not None]

    def get(self, principal: Principal, webhook_id: str) -> WebhookSubscriptionRecord:
        sub = self._table.get(webhook_id)
        if sub is None or (sub["merchantId"], sub["environment"]) != principal.scope:
            raise ApiError(
                "webhook_not_found", f"No webhook subscription {webhook_id}.", param="id"
            )
        return sub

    def find(self, webhook_id: str) -> WebhookSubscriptionRecord | None:
        return self._table.get(webhook_id)

    def page(
        self, principal: Principal, limit: int, offset: int
    ) -> tuple[list[WebhookSubscriptionRecord], int]:
        newest_first = list(reversed(self.in_scope(principal.scope)))
        return newest_first[offset : offset + limit], len(newest_first)

    # -- writes --------------------------------------------------------------------------------

    def create(
        self, principal: Principal, body: dict[str, Any]
    ) -> tuple[WebhookSubscriptionRecord, str]:
        """The new subscription and its secret (shown to the caller this once)."""
        if not principal.merchant.webhooks:
            raise ApiError("permission_denied", "Webhooks are not enabled for this merchant.")
        _reject_unknown(body, CREATE_FIELDS)
        if "events" not in body:
            raise ApiError(
                "missing_field", '`events` is required (use ["*"] for all).', param="events"
            )
        url = body.get("url")
        url = None if url is None else check_url(url, principal.environment)
        events = check_events(body["events"])
        description = check_description(body.get("description"))
        now = self._now()
        secret = new_secret(self._rng)
        sub: WebhookSubscriptionRecord = {
            "id": unused(lambda: "wh_" + hex_token(self._rng, 12), self._table.get),
            "merchantId": principal.merchant.id,
            "environment": principal.environment,
            "url": url,
            "managed": url is None,
            "events": events,
            "active": True,
            "description": description,
            "secret": secret,
            "previousSecret": None,
            "previousSecretExpiresAt": None,
            "deactivatedReason": None,
            "createdAt": now,
            "updatedAt": now,
        }
        self._table.put(sub["id"], sub)
        self._by_scope[principal.scope].append(sub["id"])
        return sub, secret

    def update(
        self, principal: Principal, webhook_id: str, body: dict[str, Any]
    ) -> WebhookSubscriptionRecord:
        sub = self.get(principal, webhook_id)
        _reject_unknown(body, UPDATE_FIELDS)
        if "url" in body:
            # null turns the subscription into a managed inbox; a URL makes it deliver there.
            url = body["url"]
            sub["url"] = None if url is None else check_url(url, principal.environment)
            sub["managed"] = sub["url"] is None
        # Null leaves `events` and `active` as they are (an absent field); on `url` and
        # `description` it is a value: the managed inbox, no description.
        if body.get("events") is not None:
            sub["events"] = check_events(body["events"])
        if body.get("active") is not None:
            if not isinstance(body["active"], bool):
                raise _invalid("active", "`active` must be true or false.")
            sub["active"] = body["active"]
            if body["active"]:
                sub["deactivatedReason"] = None
            elif not sub.get("deactivatedReason"):
                sub["deactivatedReason"] = "paused"
        if "description" in body:
            sub["description"] = check_description(body["description"])
        sub["updatedAt"] = self._now()
        self._table.put(sub["id"], sub)
        return sub

    def delete(self, principal: Principal, webhook_id: str) -> None:
        # Its deliveries stay stored; a pending retry finds no subscription and is cancelled.
        sub = self.get(principal, webhook_id)
        self._table.delete(sub["id"])

    def rotate(
        self, principal: Principal, webhook_id: str
    ) -> tuple[WebhookSubscriptionRecord, str]:
        """New secret now; the old one signs `v0` for 24 simulated hours, then is erased.

        Rotating again inside a grace drops the older previous secret at once: a delivery carries
        at most two signatures.
        """
        sub = self.get(principal, webhook_id)
        now = self._now()
        expires = now + ROTATION_GRACE_SECONDS
        secret = new_secret(self._rng)
        sub.update(
            {
                "secret": secret,
                "previousSecret": sub["secret"],
                "previousSecretExpiresAt": expires,
                "updatedAt": now,
            }
        )
        self._table.put(sub["id"], sub)
        self._jobs.schedule(SECRET_EXPIRY_JOB, expires, {"webhookId": sub["id"]})
        return sub, secret

    def set_secret(
        self, principal: Principal, webhook_id: str, secret: Any
    ) -> WebhookSubscriptionRecord:
        """The control plane's way to give a subscription a signing secret it had before
        (`payorch listen` after a reset made it anew): the receiver keeps the secret it was
        configured with. No grace: the given secret signs from now on, alone."""
        if not isinstance(secret, str) or not SECRET_PATTERN.fullmatch(secret):
            raise _invalid(
                "secret",
                "`secret` is a signing secret: whsec_ and 20 to 200 characters of A-Z a-z 0-9 _ -.",
            )
        sub = self.get(principal, webhook_id)
        sub.update(
            {
                "secret": secret,
                "previousSecret": None,
                "previousSecretExpiresAt": None,
                "updatedAt": self._now(),
            }
        )
        self._table.put(sub["id"], sub)
        return sub

    def expire_secret(self, payload: dict[str, Any]) -> None:
        """Job: erase the previous secret once its grace is over (a later rotation may extend)."""
        sub = self._table.get(payload["webhookId"])
        if sub is None or (expires := sub.get("previousSecretExpiresAt")) is None:
            return
        if expires <= self._now():
            sub.update({"previousSecret": None, "previousSecretExpiresAt": None})
            self._table.put(sub["id"], sub)

    def deactivate(self, webhook_id: str, reason: str) -> None:
        sub = self._table.get(webhook_id)
        if sub is not None and sub["active"]:
            sub.update({"active": False, "deactivatedReason": reason, "updatedAt": self._now()})
            self._table.put(sub["id"], sub)
