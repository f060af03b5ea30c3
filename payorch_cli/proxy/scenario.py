"""The scenario of a proxy recording: each exchange made into the record `GET /_sim/requests/{id}`
would give for it, and the webhooks into delivered events, given to `payorch record`'s own
`record()` and `to_yaml()`, so the proxy writes what `record` would write for the same traffic.

What the proxy knows differently from the request log:
- the credential: a request with an `Authorization` header acted as the recording's credential
  (`as:` its fixture name when it is one of the built-in fixtures' keys, which the redactor
  noted before replacing it); one without as `none`; a live key (`sk_live_`) as production;
- time: the order of the recording. Each record gets a made-up instant from its `seq`, so an
  event goes after the last request that completed before it arrived;
- an exchange that got no answer (502/504 from the proxy) is not comparable: left out, counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from payorch_cli.recording import format as fmt
from payorch_cli.recording.polls import repeated_by_poll, with_next

CREDENTIAL_PLACEHOLDER = re.compile(r"(?:(?:sk|pk)_(?:test|live)_|rt_|tok_|whsec_)?REDACTED_\d+")
MASK = "****"
TOOL_HEADER = "x-payorch-tool"  # set by payorch's own tools (payorch_cli/client.py)
KEPT_HEADERS = {"idempotency-key": "Idempotency-Key", "sandbox-simulate": "Sandbox-Simulate"}
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class Built:
    text: str  # the scenario file
    steps: int = 0
    requests: int = 0
    not_comparable: int = 0
    tools: int = 0
    notes: list[str] = field(default_factory=list)


def records(path: Path, upto: int | None = None) -> Iterator[dict[str, Any]]:
    """The records of a recording after its header, read line by line (not all at once), up to
    byte `upto` (what was on disk when asked: the proxy goes on appending)."""
    with path.open("rb") as file:
        first = file.readline()
        header = orjson.loads(first or b"null")
        if not isinstance(header, dict) or header.get("format") != fmt.FORMAT:
            raise ValueError(f"{path} is not a payorch recording")
        position = len(first)
        for line in file:
            position += len(line)
            if upto is not None and position > upto:
                return
            if line.strip():
                yield orjson.loads(line)


def _tick(seq: int) -> str:
    """The made-up instant of the seq-th record (a second apart: order, not time)."""
    moment = EPOCH + timedelta(seconds=seq)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _credential(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() or None if scheme else None


def _body_view(message: dict[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"bytes": message["bodyBytes"], "truncated": message["truncated"]}
    if message.get("body") is not None:
        view["body"] = message["body"]
    elif message.get("bodyText"):
        view["text"] = message["bodyText"]
    return view


def detail_of(exchange: dict[str, Any]) -> dict[str, Any]:
    """The request-log record (`GET /_sim/requests/{id}`'s shape) of one answered exchange."""
    request, response = exchange["request"], exchange["response"]
    credential = _credential(request["headers"])
    body = response.get("body")
    error = body.get("error") if isinstance(body, dict) and response["status"] >= 400 else None
    code = error.get("code") if isinstance(error, dict) else None
    return {
        "id": f"seq_{exchange['seq']}",
        "at": exchange["at"],
        "simulatedAt": _tick(exchange["seq"]),
        "method": request["method"],
        "path": request["path"],
        "query": request["query"] or None,
        "status": response["status"],
        "errorCode": code if isinstance(code, str) else None,
        # The log knows no merchant for a request whose credential was refused.
        "merchantId": None if credential is None or response["status"] == 401 else "recorded",
        "environment": "production" if credential and "_live_" in credential else "sandbox",
        "eventIds": [],
        "credential": credential,
        "request": {
            "headers": {
                KEPT_HEADERS[name]: value
                for name, value in request["headers"].items()
                if name in KEPT_HEADERS
            },
            "body": _body_view({**request, "body": _masked(request.get("body"))}),
        },
        "response": {"body": _body_view(response)},
    }


@dataclass
class _Read:
    """What a recording holds for its scenario: the answered requests as request-log records,
    the webhooks' events, and the polls folded into their last read."""

    details: list[dict[str, Any]] = field(default_factory=list)
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    polls: dict[str, list[Any]] = field(default_factory=dict)  # last read's id -> instants
    not_comparable: int = 0
    tools: int = 0

    @classmethod
    def of(cls, path: Path, upto: int | None) -> _Read:
        read = cls()
        attempts: list[Any] = []  # the poll being read: its early attempts' instants
        for item, following in with_next(records(path, upto)):
            if item.get("kind") == "exchange":
                early = repeated_by_poll(item, following)
                if TOOL_HEADER in item["request"]["headers"]:
                    read.tools += 1  # payorch's own tools' calls: `record` leaves them out too
                elif early:
                    attempts.append(item.get("at"))  # folded into the last read's step
                elif item.get("comparable") and item.get("response") is not None:
                    read.details.append(detail_of(item))
                    if attempts:
                        read.polls[read.details[-1]["id"]] = [*attempts, item.get("at")]
                else:
                    read.not_comparable += 1
                if not early:
                    attempts = []
            elif item.get("kind") == "webhook" and isinstance(item.get("body"), dict):
                envelope = item["body"]
                key = str(envelope.get("id") or f"seq_{item['seq']}")
                # A retried delivery is the same event: the first arrival places it.
                read.events.setdefault(key, {**envelope, "createdAt": _tick(item["seq"])})
        return read


def build(
    path: Path,
    names: dict[str, str],
    name: str = "recorded through payorch proxy",
    upto: int | None = None,
) -> Built:
    """The scenario file of the recording at `path`; `names`: credential placeholder -> fixture
    name (the redactor's, in memory)."""
    from payorch_cli.record import Identity, record, recordable, to_yaml
    from payorch_cli.scenario.credentials import Credentials

    read = _Read.of(path, upto)
    details, events = read.details, read.events
    used = Counter(d["credential"] for d in details if d["credential"] is not None)
    main = next((c for c, _ in used.most_common() if c in names), None)
    credentials = Credentials.builtin()
    # No `secret_of`: a key in a request body (POST /auth/token's) is never written, even a
    # fixture's; the scenario reads it from ${env.PAYORCH_RECORD_…}, as `record` says.
    identity = Identity(
        names[main].replace("/sandbox", "") if main else None,
        _production(credentials, names[main]) if main else None,
    )
    recording = record(details, list(events.values()), identity, name)
    kept = [d for d in details if recordable(d["method"], d["path"])]
    pairs = _aligned(recording.document, kept)
    _outside_the_api(pairs)
    _per_step_credentials(pairs, names, identity.name)
    _polls_retried(pairs, read.polls)
    recording.document["description"] = str(recording.document["description"]).replace(
        "Recorded by `payorch record`", "Recorded by `payorch proxy`"
    )
    text = to_yaml(recording.document, recording.comments)
    return Built(
        text,
        len(recording.document["steps"]),
        len(details),
        read.not_comparable,
        read.tools,
        list(dict.fromkeys(recording.notes)),
    )


def _production(credentials: Any, name: str) -> str | None:
    owner = name.split("/")[0]
    production = f"{owner}/production"
    return production if production in credentials.by_name else None


def _masked(value: Any) -> Any:
    """A request body with its credential placeholders marked as the request log masks them
    (`****`), so that `record()` names each as `${env.PAYORCH_RECORD_…}` instead of sending a
    placeholder no server accepts."""
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if isinstance(value, str) and CREDENTIAL_PLACEHOLDER.fullmatch(value):
        return MASK + value
    return value


def _aligned(
    document: dict[str, Any], kept: list[dict[str, Any]]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The steps of `record()` with the kept requests they came from, in order (events between
    them are not theirs); none when they do not line up (a request that became a comment)."""
    steps = [s for s in document["steps"] if "request" in s or "advance_clock" in s]
    if len(steps) != len(kept):
        return []
    pairs = list(zip(steps, kept, strict=True))
    for step, detail in pairs:
        if "request" in step and step["request"].get("method") != detail["method"]:
            return []
    return pairs


def _outside_the_api(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """A request outside /api/ and /_sim/ (a checkout page, `/c/<id>`, a namespace's prefix) is
    a `url:` under `${base_url}`: a step's `path` is relative to /api/v1."""
    for step, detail in pairs:
        request = step.get("request")
        if request is None or detail["path"].startswith(("/api/", "/_sim/")):
            continue
        request["url"] = "${base_url}" + request.pop("path")


def _polls_retried(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]], polls: dict[str, list[Any]]
) -> None:
    """A poll recorded as N reads is one step, expecting its last answer, with `retry`: twice
    the attempts the upstream needed, at the pace the recording polled (a poll's early reads
    saw the upstream mid-way; recording/polls.py)."""
    for step, detail in pairs:
        instants = polls.get(detail["id"])
        if instants is None or "request" not in step:
            continue
        known = [t for t in map(fmt.instant, instants) if t is not None]
        pace = (known[-1] - known[0]) / (len(known) - 1) if len(known) == len(instants) else 0.1
        step["retry"] = {
            "attempts": 2 * len(instants),
            "interval": f"{max(10, round(pace * 1000, -1)):.0f}ms",
        }


def _per_step_credentials(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]], names: dict[str, str], main: str | None
) -> None:
    """`as: NAME` on the steps of requests made with another fixture credential than the
    scenario's."""
    for step, detail in pairs:
        name = names.get(detail["credential"] or "")
        if name is None or "request" not in step or "as" in step:
            continue
        short = name.replace("/sandbox", "")
        if short != main and not (
            detail["environment"] == "production" and short.endswith("/production")
        ):
            step["as"] = short
