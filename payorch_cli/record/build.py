"""Turning the request log into a scenario (`payorch record`): a pure transformation, from the
records `GET /_sim/requests/{requestId}` returns (oldest first) and the event envelopes that were
delivered, to a scenario document the language of `payorch_cli/scenario` runs as is.

- Each request becomes a `request:` step (method, path relative to /api/v1, query, body, the kept
  `Idempotency-Key` and `Sandbox-Simulate` headers); `POST /_sim/clock/advance` becomes
  `advance_clock:`. What a replay cannot or must not repeat is left out (`SKIPPED`): webhook
  subscriptions (the runner hosts its own receiver), the live streams, the reset, coverage.
- Ids: a string under an id-like key (`id`, `…Id`, `…Token`, `token`, `clabe`) of a response
  (or of a delivered event) that no earlier request sent is a server-made id. When a later
  request uses it (in its path, query or body), the step that returned it gets a `save`, and
  every later use is `${name}`; later expectations that show it expect `${name}` too.
- Expectations: the status, the error code of an error, and the stable fields of a JSON answer
  (`STABLE_WORDS`: statuses, amounts, currencies, types, fees, balances...), never ids,
  timestamps, URLs or request ids.
- Events: each delivered event, as `expect_event` after the request (or clock advance) that
  caused it (the log's `eventIds`; one no request caused, after the last request before it in
  time), matching its data's id (saved) and stable fields. One caused by a request left out is
  left out.
- Credentials: the scenario's `as:` is the recording credential's name; a production request of
  the merchant is `as: NAME/production`, one that had no credential `as: none` (literal keys are
  never written, except a fixture secret restored into `POST /auth/token`, which the log masks).
- Ids in paths: each comes from a saved variable. One whose creation is not in the recording
  (`--last 2` after a payment) becomes a var of the scenario holding the recorded value, flagged
  with a comment (`UNLINKED`) and counted in the summary: set it to an id that exists where the
  scenario runs.
- Reads whose answer depends on the server's history (`GET /me/balance`, lists with
  `pagination`): a replay on a server that already holds other data, or the same journey's
  previous replay, sees other totals. The balance's amounts (`balance`, `feeSummary`) are checked
  as changes from the recording's first balance read (saved, its amounts checked as numbers
  only), and lists of objects as `$contains` of the items naming an object of this run, so a
  recorded journey replays green again and again on the same server (docs/decisions.md). After
  a clock advance, the amounts are checked as numbers only: the advance matures the server's
  other objects too; the run's own movements are still checked.
- What cannot be a step (a logged body nested deeper or larger than a scenario file may be, a
  log entry the server could not serve, a record of a shape the recorder does not know) is
  written as a comment where the step would be, and counted in the summary.
- Masked values: a masked `documentId` becomes a valid test document of the payment's country
  (`TEST_DOCUMENTS`), a masked card number a test card; other masked secrets are named as
  `${env.PAYORCH_RECORD_…}` so the file says what it needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from payorch.vocabulary import API_PREFIX
from payorch_cli.record.steps import Identity, StepsBuilder
from payorch_cli.record.values import TEST_DOCUMENTS
from payorch_cli.record.yaml import to_yaml

__all__ = [
    "TEST_DOCUMENTS",
    "Identity",
    "Recording",
    "left_out_because",
    "record",
    "recordable",
    "to_yaml",
]

# Requests a replay leaves out: (method or None for any, path prefix under the server root, why).
SKIPPED: tuple[tuple[str | None, str, str], ...] = (
    (None, "/api/v1/webhooks", "the scenario runner subscribes its own receiver"),
    (None, "/_sim/events", "a live stream"),
    (None, "/_sim/requests", "a read of the request log itself"),
    ("POST", "/_sim/reset", "a replay starts where the recording does"),
    ("GET", "/_sim/coverage", "the server's tally, not a call of the journey"),
)


@dataclass
class Recording:
    """The scenario document, and what the recorder left out or could not restore."""

    document: dict[str, Any]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Comment lines written before steps[index] (index len(steps): after the last step).
    comments: dict[int, list[str]] = field(default_factory=dict)
    unexpressed: list[str] = field(default_factory=list)  # requests written as comments only
    unlinked: list[str] = field(default_factory=list)  # ids in paths no recorded step created


def record(
    details: list[dict[str, Any]],
    events: list[dict[str, Any]],
    identity: Identity,
    name: str = "recorded session",
    outside: Iterable[str] = (),
) -> Recording:
    """The scenario of `details` (request-log records with bodies, oldest first) and `events`
    (delivered event envelopes, any order). `outside`: the ids of events caused by requests
    of the log outside the recording (left out, as those requests are)."""
    builder = StepsBuilder(identity)
    kept, caused_by = _keep_recordable(details, builder, outside)
    caused, by_time = _place_events(events, caused_by, kept)
    for index, detail in enumerate(kept):
        builder.request_or_comment(detail)
        for event in caused[index]:
            builder.event(event)
        upto = kept[index + 1]["simulatedAt"] if index + 1 < len(kept) else None
        while by_time and (upto is None or (by_time[0].get("createdAt") or "") < upto):
            builder.event(by_time.pop(0))
    return Recording(
        _document(builder, identity, name),
        builder.skipped,
        builder.notes,
        builder.comments,
        builder.unexpressed,
        builder.unlinked,
    )


def _keep_recordable(
    details: list[dict[str, Any]], builder: StepsBuilder, outside: Iterable[str]
) -> tuple[list[dict[str, Any]], dict[str, int | None]]:
    """The requests that become steps, and for each event id the index of the kept request
    that caused it (None: caused by a request left out, so left out too)."""
    kept: list[dict[str, Any]] = []
    caused_by: dict[str, int | None] = dict.fromkeys(outside)
    for detail in details:
        if not recordable(detail["method"], detail["path"]):
            builder.skipped.append(f"{detail['method']} {detail['path']}")
            caused_by.update(dict.fromkeys(detail.get("eventIds") or ()))
        else:
            caused_by.update(dict.fromkeys(detail.get("eventIds") or (), len(kept)))
            kept.append(detail)
    return kept, caused_by


def _place_events(
    events: list[dict[str, Any]],
    caused_by: dict[str, int | None],
    kept: list[dict[str, Any]],
) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The events each kept request caused, and the rest (a server's background tick; a server
    from before `eventIds`) by time, from the first kept request on."""
    queue = sorted(events, key=lambda e: (e.get("createdAt") or "", e.get("id") or ""))
    caused: list[list[dict[str, Any]]] = [[] for _ in kept]
    by_time: list[dict[str, Any]] = []
    for event in queue:
        if event.get("id") not in caused_by:
            by_time.append(event)
        elif (index := caused_by[event["id"]]) is not None:
            caused[index].append(event)
    if kept:
        first = kept[0]["simulatedAt"]
        by_time = [e for e in by_time if (e.get("createdAt") or "") >= first]
    return caused, by_time


def _document(builder: StepsBuilder, identity: Identity, name: str) -> dict[str, Any]:
    document: dict[str, Any] = {"scenario": name}
    if builder.skipped:
        document["description"] = "Recorded by `payorch record`; left out: " + ", ".join(
            builder.skipped
        )
    else:
        document["description"] = "Recorded by `payorch record`."
    document["tags"] = ["recorded"]
    if identity.name:
        document["as"] = identity.name
    if builder.vars:
        document["vars"] = builder.vars
    document["steps"] = builder.finish()
    return document


def recordable(method: str, path: str) -> bool:
    """Whether a request of the log becomes a step (the others are left out, `SKIPPED`)."""
    return left_out_because(method, path) is None


def left_out_because(method: str, path: str) -> str | None:
    """Why a replay leaves this request out (`SKIPPED`), or None for a request it repeats."""
    for skip_method, prefix, why in SKIPPED:
        if (skip_method is None or skip_method == method) and (
            path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + "?")
        ):
            return why
    if path.startswith(API_PREFIX + "/_sim/"):  # the control plane, also served under the API
        return left_out_because(method, path[len(API_PREFIX) :])
    return None
