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
- Masked values: a masked `documentId` becomes a valid test document of the payment's country
  (`TEST_DOCUMENTS`), a masked card number a test card; other masked secrets are named as
  `${env.PAYORCH_RECORD_…}` so the file says what it needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from payorch.vocabulary import API_PREFIX
from payorch_cli.scenario.durations import format_duration

MASK = "****"

# Requests a replay leaves out: (method or None for any, path prefix under the server root).
SKIPPED: tuple[tuple[str | None, str], ...] = (
    (None, "/api/v1/webhooks"),  # the runner subscribes its own receiver
    (None, "/_sim/events"),  # a live stream
    (None, "/_sim/requests"),  # the log itself
    ("POST", "/_sim/reset"),  # a recording starts after the reset; a replay on a fresh server
    ("GET", "/_sim/coverage"),
)
ADVANCE_PATH = "/_sim/clock/advance"

# A key of a response naming a server-made value.
_ID_KEY = re.compile(r"^(id|token|clabe)$|(Id|Token|_id|_token)$")
# A key of a stable field (case-insensitive substring).
STABLE_WORDS = (
    "status",
    "amount",
    "currency",
    "type",
    "kind",
    "fee",
    "total",
    "balance",
    "available",
    "pending",
    "reserve",
    "frozen",
    "resolution",
    "reason",
    "environment",
    "action",
    "events",
    "created",
    "refunded",
    "net",
    "gross",
    "active",
    "method",
)
_TIMESTAMP_KEY = re.compile(r"(At|_at|Date|date|timestamps?|now|expires.*)$")
_IDENTIFIER_PART = re.compile(r"[^A-Za-z0-9_]")
_NAME_BY_PREFIX = (
    ("TXN-", "tx"),
    ("CLM-", "claim"),
    ("WDR-", "withdrawal"),
    ("po_", "payout"),
    ("evt_", "event"),
)
# A valid test buyer document per country (ISO 3166 alpha-3) for a masked `documentId`.
TEST_DOCUMENTS = {
    "MEX": "XAXX010101000",  # the SAT's generic RFC
    "BRA": "52998224725",  # a CPF with valid check digits
    "CHL": "111111111",
    "ARG": "30123456",
    "COL": "1234567890",
    "PER": "12345678",
    "USA": "123456789",
}
TEST_CARD = "4242424242424242"
_COUNTRY_BY_CURRENCY = {"MXN": "MEX", "BRL": "BRA", "CLP": "CHL", "ARS": "ARG", "COP": "COL"}


@dataclass(frozen=True, slots=True)
class Identity:
    """How the recording names credentials: the scenario's `as:` (the recording key's name, e.g.
    `shp_mazul_tienda`), its production name if the fixtures have one, and the fixture secret of
    a publishable key (for `POST /auth/token`, whose `secretKey` the log masks)."""

    name: str | None
    production: str | None = None
    secret_of: Callable[[str], str | None] = lambda publishable: None


@dataclass
class _Id:
    value: str
    step: int  # index into steps of the step whose answer (or event) showed it
    path: str  # save path in that answer
    key: str
    name: str | None = None  # set when a later request uses it


@dataclass
class Recording:
    """The scenario document, and what the recorder left out or could not restore."""

    document: dict[str, Any]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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
    builder = _Builder(identity)
    kept: list[dict[str, Any]] = []
    # An event goes after the request that caused it (the log's `eventIds`); one caused by a
    # request left out is left out too.
    caused_by: dict[str, int | None] = dict.fromkeys(outside)
    for detail in details:
        if not recordable(detail["method"], detail["path"]):
            builder.skipped.append(f"{detail['method']} {detail['path']}")
            caused_by.update(dict.fromkeys(detail.get("eventIds") or ()))
        else:
            caused_by.update(dict.fromkeys(detail.get("eventIds") or (), len(kept)))
            kept.append(detail)
    queue = sorted(events, key=lambda e: (e.get("createdAt") or "", e.get("id") or ""))
    caused: list[list[dict[str, Any]]] = [[] for _ in kept]
    # The rest (a server's background tick; a server from before `eventIds`) by time: after the
    # last request that started before it.
    by_time: list[dict[str, Any]] = []
    for event in queue:
        if event.get("id") not in caused_by:
            by_time.append(event)
        elif (index := caused_by[event["id"]]) is not None:
            caused[index].append(event)
    if kept:
        first = kept[0]["simulatedAt"]
        by_time = [e for e in by_time if (e.get("createdAt") or "") >= first]
    for index, detail in enumerate(kept):
        builder.request(detail)
        for event in caused[index]:
            builder.event(event)
        upto = kept[index + 1]["simulatedAt"] if index + 1 < len(kept) else None
        while by_time and (upto is None or (by_time[0].get("createdAt") or "") < upto):
            builder.event(by_time.pop(0))
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
    document["steps"] = builder.finish()
    return Recording(document, builder.skipped, builder.notes)


def recordable(method: str, path: str) -> bool:
    """Whether a request of the log becomes a step (the others are left out, `SKIPPED`)."""
    return not _skipped(method, path)


def _skipped(method: str, path: str) -> bool:
    for skip_method, prefix in SKIPPED:
        if (skip_method is None or skip_method == method) and (
            path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + "?")
        ):
            return True
        if path.startswith(API_PREFIX + "/_sim/") and _skipped(method, path[len(API_PREFIX) :]):
            return True
    return False


class _Builder:
    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.steps: list[dict[str, Any]] = []
        self.ids: dict[str, _Id] = {}  # value -> where it first came from
        self.sent: set[str] = set()  # strings some request sent (not server-made then)
        self.names: set[str] = set()
        self.skipped: list[str] = []
        self.notes: list[str] = []
        self.country: str | None = None  # of the last payment seen: for masked documents

    # -- requests -------------------------------------------------------------------------------

    def request(self, detail: dict[str, Any]) -> None:
        method, path = detail["method"], detail["path"]
        request_body = detail.get("request", {}).get("body", {})
        body = request_body.get("body")
        self._note_country(body)
        advance = path.removeprefix(API_PREFIX) == ADVANCE_PATH and detail["status"] == 200
        if method == "POST" and advance:  # a refused advance stays a request, expecting its 400
            seconds = body.get("seconds") if isinstance(body, dict) else None
            if isinstance(seconds, (int, float)):
                self.steps.append({"advance_clock": format_duration(seconds)})
                return
        step: dict[str, Any] = {}
        call: dict[str, Any] = {"method": method, "path": self._path(path)}
        query = detail.get("query")
        if query:
            call["query"] = {k: self._use(v) for k, v in parse_qsl(query, keep_blank_values=True)}
        headers = detail.get("request", {}).get("headers") or {}
        if headers:
            call["headers"] = {k: self._header(k, v) for k, v in headers.items()}
        if body is not None:
            call["body"] = self._body(path, body)
        elif "text" in request_body:
            call["raw"] = _escape(request_body["text"])
            self.notes.append(f"{method} {path}: a body that is not JSON, sent as recorded")
        step["request"] = call
        credential = self._as(detail)
        if credential is not None:
            step["as"] = credential
        step["expect"] = self._expect(detail)
        self._collect(detail.get("response", {}).get("body", {}).get("body"), len(self.steps))
        self._note_country(detail.get("response", {}).get("body", {}).get("body"))
        self.steps.append(step)

    def _as(self, detail: dict[str, Any]) -> str | None:
        if detail.get("merchantId") is None:
            return "none"
        if detail.get("environment") == "production" and self.identity.production:
            return self.identity.production
        return None

    def _path(self, path: str) -> str:
        relative = path[len(API_PREFIX) :] if path.startswith(API_PREFIX + "/") else path
        return "/".join(self._use(part) for part in relative.split("/"))

    def _header(self, name: str, value: str) -> str:
        if name.lower() == "idempotency-key":
            # The same key for the same calls of one run, another for each run.
            return "${run.id}-" + _escape(value)
        return _escape(value)

    def _body(self, path: str, body: Any, key: str = "") -> Any:
        if isinstance(body, dict):
            return {k: self._body_field(path, k, v) for k, v in body.items()}
        if isinstance(body, list):
            return [self._body(path, item, key) for item in body]
        if isinstance(body, str):
            self.sent.add(body)
            return self._use(body)
        return body

    def _body_field(self, path: str, key: str, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(MASK) and value not in self.ids:
            return self._unmask(path, key, value)
        return self._body(path, value, key)

    def _unmask(self, path: str, key: str, value: str) -> str:
        lowered = key.lower().replace("_", "")
        tail = value[len(MASK) :]
        if lowered == "documentid":
            for document in TEST_DOCUMENTS.values():
                if tail and document.endswith(tail):
                    return document
            return TEST_DOCUMENTS.get(self.country or "", "ABCD1234")
        if lowered in ("cardnumber", "pan", "number"):
            return TEST_CARD
        if lowered in ("cvv", "cvc"):
            return "123"
        if lowered == "secretkey" and path.endswith("/auth/token"):
            secret = self.identity.secret_of(self._publishable or "")
            if secret is not None:
                return secret
        env = "PAYORCH_RECORD_" + _IDENTIFIER_PART.sub("_", key).upper()
        self.notes.append(
            f"{path}: `{key}` was masked in the log; the scenario reads ${{env.{env}}}"
        )
        return "${env." + env + "}"

    @property
    def _publishable(self) -> str | None:
        return getattr(self, "_last_publishable", None)

    def _note_country(self, body: Any) -> None:
        if not isinstance(body, dict):
            return
        if isinstance(body.get("apiKey"), str):
            self._last_publishable = body["apiKey"]
        country = body.get("country")
        if isinstance(country, str) and len(country) == 3:
            self.country = country.upper()
        elif isinstance(body.get("currencyLocal"), str):
            self.country = _COUNTRY_BY_CURRENCY.get(body["currencyLocal"], self.country)

    def _use(self, text: str) -> str:
        """A string a request sends: `${name}` if it is (or holds, in a path) a server-made id."""
        found = self.ids.get(text)
        if found is not None:
            return "${" + self._name(found) + "}"
        return _escape(text)

    def _name(self, found: _Id) -> str:
        if found.name is None:
            base = next(
                (name for prefix, name in _NAME_BY_PREFIX if found.value.startswith(prefix)),
                None,
            ) or _IDENTIFIER_PART.sub("_", found.key)
            if base[0].isdigit():
                base = "_" + base
            name, n = base, 2
            while name in self.names:
                name, n = f"{base}{n}", n + 1
            self.names.add(name)
            found.name = name
            step = self.steps[found.step]
            step.setdefault("save", {})[name] = found.path
        return found.name

    # -- answers --------------------------------------------------------------------------------

    def _collect(self, value: Any, step: int, path: str = "") -> None:
        """Remember the server-made ids of an answer (or event) at `path`, first sighting wins."""
        if isinstance(value, dict):
            for key, item in value.items():
                sub = f"{path}.{key}" if path else key
                if (
                    isinstance(item, str)
                    and _ID_KEY.search(key)
                    and len(item) >= 4
                    and item not in self.sent
                    and item not in self.ids
                    and "." not in key
                ):
                    self.ids[item] = _Id(item, step, sub, key)
                else:
                    self._collect(item, step, sub)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self._collect(item, step, f"{path}[{index}]")

    def _expect(self, detail: dict[str, Any]) -> dict[str, Any]:
        status = detail["status"]
        expect: dict[str, Any] = {"status": status}
        if status >= 400:
            if detail.get("errorCode") and detail.get("merchantId") is not None:
                expect["error"] = detail["errorCode"]
            return expect
        body = detail.get("response", {}).get("body", {}).get("body")
        stable = self._stable(body, inherited=False)
        if stable not in (None, {}, []):
            expect["json"] = stable
        return expect

    def _stable(self, value: Any, *, inherited: bool) -> Any:
        """The part of an answer a replay must reproduce; None where nothing is."""
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for key, item in value.items():
                saved = self.ids[item].name if isinstance(item, str) and item in self.ids else None
                if saved is not None:
                    kept[key] = "${" + saved + "}"  # a link to a saved id
                    continue
                if _volatile(key, item):
                    continue
                stable_key = inherited or _stable_key(key)
                if isinstance(item, (dict, list)):
                    sub = self._stable(item, inherited=stable_key)
                    if sub is not None and sub != {}:
                        kept[key] = sub
                elif stable_key:
                    kept[key] = _escape(item) if isinstance(item, str) else item
            return kept
        if isinstance(value, list):
            items = [self._stable(item, inherited=inherited) for item in value]
            if all(isinstance(item, (str, int, float, bool)) or item is None for item in value):
                return (
                    [_escape(i) if isinstance(i, str) else i for i in value] if inherited else None
                )
            return [item if item is not None else {"$any": True} for item in items]
        return None

    # -- events ---------------------------------------------------------------------------------

    def event(self, envelope: dict[str, Any]) -> None:
        event_type = envelope.get("type")
        if not isinstance(event_type, str):
            return
        data = envelope.get("data")
        match: dict[str, Any] = {}
        if isinstance(data, dict):
            stable = self._stable(data, inherited=False)
            if isinstance(stable, dict):
                # The event is about an object a step returned: say which (a save there).
                data_id = data.get("id")
                about = self.ids.get(data_id) if isinstance(data_id, str) else None
                if about is not None:
                    stable = {"id": "${" + self._name(about) + "}", **stable}
                if stable:
                    match["data"] = stable
        step: dict[str, Any] = {"expect_event": {"type": event_type}}
        if match:
            step["expect_event"]["match"] = match
        index = len(self.steps)
        self.steps.append(step)
        if isinstance(data, dict):
            self._collect(data, index, "data")

    def finish(self) -> list[dict[str, Any]]:
        return self.steps


def _stable_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in STABLE_WORDS)


def _volatile(key: str, value: Any) -> bool:
    if _ID_KEY.search(key) or _TIMESTAMP_KEY.search(key):
        return True
    lowered = key.lower()
    if "url" in lowered or "path" in lowered or lowered in ("requestid", "secret", "signature"):
        return True
    return isinstance(value, str) and (
        value.startswith(("http://", "https://", MASK))
        or re.match(r"\d{4}-\d\d-\d\dT", value) is not None
    )


def _escape(text: str) -> str:
    """A recorded string as the scenario language reads it literally (`$${` is a `${`)."""
    return text.replace("${", "$${")


def to_yaml(document: dict[str, Any]) -> str:
    """The document as a scenario file: the schema comment, block style for the steps, flow
    style for the leaves, strings quoted where YAML 1.1 or 1.2 would read them otherwise."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = '"' if ("${" in value or _looks_typed(value)) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)
    text = yaml.dump(
        document,
        Dumper=Dumper,
        sort_keys=False,
        default_flow_style=None,
        allow_unicode=True,
        width=100,
    )
    header = "# yaml-language-server: $schema=../payorch_cli/scenario/scenario.schema.json\n"
    return header + text


def _looks_typed(value: str) -> bool:
    """A string YAML would read as something else (a number, a boolean, null, a date)."""
    import yaml

    from payorch import bounded

    try:  # bounded: a logged string can be an alias bomb or a 30,000-deep `[[[…`
        loaded = bounded.safe_load(value)
    except (yaml.YAMLError, ValueError):
        return True
    return not isinstance(loaded, str) or loaded != value or value[:1].isdigit()
