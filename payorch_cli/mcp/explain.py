"""Why a payment (or payout) is where it is: its cascade trace (GET /_sim/{payments,payouts}/{id}
/trace) told as a few sentences, its entries, and the requests of the log around it (the one that
created it, those naming it, those that caused its events), as text and as data.

The request log (a sandbox-key read) holds the merchant's requests in both environments; the
creating request is found among the POSTs made just before the trace's `created` entry by
reading their answers (its summary has no body), so only a handful of details are fetched.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from payorch_cli.mcp.sandbox import Environment, Sandbox, ToolFailure

_SPACES = re.compile(r" {2,}")
LOG_PAGE = 100
LOG_PAGES = 5  # the newest 500 requests are searched; older ones are named as not searched
CREATE_PATHS = ("/api/v1/payments", "/api/v1/me/payout/send", "/api/v1/checkout/sessions")
CREATE_WINDOW = timedelta(seconds=5)


def _time(stamp: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None


def _clock(stamp: Any) -> str:
    return str(stamp).replace("T", " ").removesuffix("Z")


def explain(sandbox: Sandbox, subject_id: str) -> tuple[str, dict[str, Any]]:
    from payorch_cli.render.requests import request_line
    from payorch_cli.render.trace import trace_heading, trace_path, trace_rows

    environment: Environment = "sandbox" if sandbox.sandbox_key else "production"
    trace = sandbox.get(trace_path(subject_id), environment=environment)
    entries: list[dict[str, Any]] = list(trace.get("entries") or [])
    notes: list[str] = []
    requests: list[dict[str, Any]] = []
    if sandbox.sandbox_key:
        try:
            requests = related_requests(sandbox, subject_id, entries, notes)
        except ToolFailure as failure:  # e.g. a server started with --request-log 0
            notes.append(f"The request log could not be read: {failure.code}: {failure.message}")
    else:
        notes.append("The request log needs a sandbox key: requests are not shown.")
    events = [
        {"type": e.get("type"), "eventId": e.get("eventId"), "at": e.get("at")}
        for e in entries
        if e.get("kind") == "event_emitted"
    ]
    deliveries = [e for e in entries if e.get("kind") == "delivery"]
    story = summary(trace, entries)
    lines = [trace_heading(trace), "", *story, "", "Trace (simulated time):"]
    lines += [f"  {at}  {kind:<18} {details}" for at, kind, details in trace_rows(trace)]
    lines += ["", f"Requests around it ({len(requests)}):"]
    # The live tail's columns pad for alignment; here a line stands alone.
    lines += [f"  {_SPACES.sub('  ', request_line(r).strip())}" for r in requests] or [
        "  none in the log"
    ]
    lines += [f"Note: {note}" for note in notes]
    data = {
        "id": trace.get("id"),
        "subject": trace.get("subject"),
        "environment": trace.get("environment"),
        "summary": story,
        "trace": trace,
        "requests": requests,
        "events": events,
        "deliveries": deliveries,
        "notes": notes,
    }
    return "\n".join(lines), data


def summary(trace: dict[str, Any], entries: list[dict[str, Any]]) -> list[str]:
    """The trace in a few sentences: what was asked, how the cascade routed it (a failover
    named as such), what changed its status, the events fired."""
    story: list[str] = []
    created = next((e for e in entries if e.get("kind") == "created"), None)
    subject = trace.get("subject", "payment")
    if created is not None:
        if "paymentMethodId" in created:
            what = (
                f"{created.get('paymentMethod')} ({created.get('paymentMethodId')}), "
                f"{created.get('amount')} USD = {created.get('amountLocal')} "
                f"{created.get('currencyLocal')}"
            )
        else:
            what = f"{created.get('methodId')} ({created.get('rail')}), {created.get('amount')}"
            what += f" {created.get('currency')}"
        story.append(
            f"A {trace.get('environment')} {subject} of {what}, created at "
            f"{_clock(created.get('at'))}."
        )
    attempts = [e for e in entries if e.get("kind") == "routing_attempt"]
    chosen = next((e for e in entries if e.get("kind") == "provider_chosen"), None)
    if attempts:
        path = " → ".join(
            f"{a.get('provider')} {a.get('outcome')}"
            + (f" ({a['reason']})" if a.get("reason") else "")
            for a in attempts
        )
        story.append(f"Cascade: {path}.")
        failed = [a for a in attempts if a.get("outcome") != "accepted"]
        if chosen is not None and failed:
            names = ", ".join(f"{a.get('provider')} ({a.get('outcome')})" for a in failed)
            story.append(f"It failed over from {names} to {chosen.get('provider')}.")
        elif chosen is not None:
            story.append(f"The first provider, {chosen.get('provider')}, took it.")
        else:
            story.append("No provider took it: the cascade was exhausted.")
    elif trace.get("environment") == "sandbox":
        story.append("Sandbox: no provider cascade runs (outcomes come from simulate).")
    changes = [e for e in entries if e.get("kind") == "status_changed"]
    for change in changes:
        story.append(
            f"At {_clock(change.get('at'))}: {change.get('from')} → {change.get('to')} "
            f"({change.get('cause')})."
        )
    if not changes:
        story.append("Its status has not changed since it was created.")
    ignored = [e for e in entries if e.get("kind") == "callback_ignored"]
    if ignored:
        story.append(f"{len(ignored)} provider callback(s) ignored (see the trace).")
    events = [e for e in entries if e.get("kind") == "event_emitted"]
    if events:
        story.append(
            "Events: " + ", ".join(f"{e.get('type')} ({e.get('eventId')})" for e in events)
        )
    return story


def related_requests(
    sandbox: Sandbox, subject_id: str, entries: list[dict[str, Any]], notes: list[str]
) -> list[dict[str, Any]]:
    """The log's requests about the subject, oldest first: the one that created it, those whose
    path names it (reads of its trace left out), and those that caused its events."""
    event_ids = {e.get("eventId") for e in entries if e.get("eventId")}
    created = next((e for e in entries if e.get("kind") == "created"), None)
    created_at = _time(created.get("at")) if created else None
    found: dict[str, dict[str, Any]] = {}
    candidates: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    total = 0
    for page in range(LOG_PAGES):
        answer = sandbox.get("/_sim/requests", limit=LOG_PAGE, offset=page * LOG_PAGE)
        rows += answer["data"]
        total = answer["pagination"]["total"]
        if len(rows) >= total or not answer["data"]:
            break
    if total > len(rows):
        notes.append(f"Only the newest {len(rows)} of {total} logged requests were searched.")
    for row in rows:
        path = str(row.get("path") or "")
        if subject_id in path:
            if not path.endswith("/trace"):
                found[row["id"]] = row
        elif event_ids.intersection(row.get("eventIds") or ()):
            found[row["id"]] = row
        elif row.get("method") == "POST" and path in CREATE_PATHS and created_at is not None:
            at = _time(row.get("simulatedAt"))
            if at is not None and created_at - CREATE_WINDOW <= at <= created_at:
                candidates.append(row)
    for row in candidates:  # newest first: the creating request is usually the first tried
        if _created_it(sandbox, row["id"], subject_id):
            found[row["id"]] = row
            break
    return sorted(found.values(), key=lambda r: (str(r.get("at")), str(r.get("id"))))


def _created_it(sandbox: Sandbox, request_id: str, subject_id: str) -> bool:
    try:
        detail = sandbox.get(f"/_sim/requests/{request_id}")
    except ToolFailure:
        return False
    body = (detail.get("response") or {}).get("body") or {}
    answer = body.get("body") if isinstance(body, dict) else None
    if not isinstance(answer, dict):
        return False
    return subject_id in (answer.get("transactionId"), answer.get("id")) or (
        isinstance(answer.get("payout"), dict) and answer["payout"].get("id") == subject_id
    )
