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

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from payorch.bounded import MAX_DEPTH
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
BALANCE_PATH = "/me/balance"
# What a step's body may hold: the scenario loader refuses YAML nested deeper than MAX_DEPTH
# (a body starts 4 levels down: steps, the step, request, body), and a file above 2 MiB.
MAX_BODY_DEPTH = MAX_DEPTH - 8
MAX_BODY_VALUES = 20_000
MAX_BODY_TEXT = 256 * 1024
# The amounts of a balance read that add up over the server's life: checked as changes.
_CUMULATIVE = ("balance", "feeSummary")
# A path segment that looks made by a server: a short prefix and a random tail with a digit
# (TXN-…, CLM-…, po_…, inc_…), or a long number (a CLABE); fixture ids (sbx_pix,
# prv_orbita_cards, shp_mazul_tienda) have no digit in a tail of letters and underscores.
_MADE_ID = re.compile(r"^(?:[A-Za-z]{2,5}[-_](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}|\d{10,})$")

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
        builder.request_or_comment(detail)
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
    if builder.vars:
        document["vars"] = builder.vars
    document["steps"] = builder.finish()
    return Recording(
        document,
        builder.skipped,
        builder.notes,
        builder.comments,
        builder.unexpressed,
        builder.unlinked,
    )


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
        self.comments: dict[int, list[str]] = {}
        self.unexpressed: list[str] = []
        self.unlinked: list[str] = []
        self.vars: dict[str, str] = {}  # ids of paths no recorded step created
        self.first_balance: tuple[str, dict[str, Any]] | None = None  # saved name, its answer
        self._pending_save: dict[str, str] | None = None  # the first balance read's save
        self.advanced_since_first_balance = False

    # -- requests -------------------------------------------------------------------------------

    def comment(self, text: str) -> None:
        """A comment line before the next step."""
        self.comments.setdefault(len(self.steps), []).append(text)

    def request_or_comment(self, detail: dict[str, Any]) -> None:
        """The request as a step; what cannot be one as a comment (counted in the summary)."""
        what = f"{detail.get('method')} {detail.get('path')}"
        problem = detail.get("unreadable") or _unexpressible(detail)
        if problem is None:
            steps, vars_, unlinked = len(self.steps), dict(self.vars), len(self.unlinked)
            comments = list(self.comments.get(steps, ()))
            try:
                self.request(detail)
                return
            except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
                # A log record of a shape this recorder does not know: undo, and say so.
                del self.steps[steps:]
                self.vars = vars_
                del self.unlinked[unlinked:]
                self.comments[steps] = comments
                problem = f"a log record it cannot read ({type(exc).__name__}: {exc})"[:200]
        self.unexpressed.append(what)
        self.comment(f"NOT RECORDED: {what} (status {detail.get('status')}): {problem}")

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
                self.advanced_since_first_balance = self.first_balance is not None
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
        if self._pending_save:
            step["save"] = self._pending_save
            self._pending_save = None
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
        return "/".join(self._path_part(part) for part in relative.split("/"))

    def _path_part(self, part: str) -> str:
        if part in self.ids or not _MADE_ID.match(part):
            return self._use(part)
        # An id no recorded step returned: a var holding the recorded value, flagged.
        for name, value in self.vars.items():
            if value == part:
                return "${" + name + "}"
        base = next((n for prefix, n in _NAME_BY_PREFIX if part.startswith(prefix)), "id")
        name, n = base, 2
        while name in self.names:
            name, n = f"{base}{n}", n + 1
        self.names.add(name)
        self.vars[name] = part
        self.unlinked.append(part)
        self.comment(
            f"UNLINKED: {part} was not created in this recording; it is vars.{name}: set it to "
            "an id that exists where this scenario runs"
        )
        return "${" + name + "}"

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
        relative = detail["path"].removeprefix(API_PREFIX)
        if detail["method"] == "GET" and relative == BALANCE_PATH and isinstance(body, dict):
            stable = self._balance(body)
        elif detail["method"] == "GET" and isinstance(body, dict) and "pagination" in body:
            stable = self._stable(body, inherited=False, history=True)
        else:
            stable = self._stable(body, inherited=False)
        if stable not in (None, {}, []):
            expect["json"] = stable
        return expect

    def _balance(self, body: dict[str, Any]) -> Any:
        """A balance read's expectation: its amounts as changes from the first balance read of
        the recording (saved; there, numbers of any value), its lists as `$contains` of what
        this run made."""
        stable = self._stable(body, inherited=False, history=True)
        if not isinstance(stable, dict):
            return stable
        if self.first_balance is None:
            name = "first_balance"
            n = 2
            while name in self.names:
                name, n = f"first_balance{n}", n + 1
            self.names.add(name)
            self.first_balance = (name, body)
            self._pending_save = {name: "."}
            self.comment(
                "The first balance read: its amounts depend on the server's history; later "
                f"balance reads expect changes from it (${{{name}.…}})"
            )
        name, first = self.first_balance
        # Once the clock has moved, the server's other objects move too (a held refund paid,
        # a reserve released): the amounts are then numbers only, and this run's own effect is
        # checked through its movements.
        unknown = first is body or self.advanced_since_first_balance
        for key in _CUMULATIVE:
            amounts, base = stable.get(key), first.get(key)
            if isinstance(amounts, dict) and isinstance(base, dict):
                stable[key] = {
                    k: _change(f"{name}.{key}.{k}", v, None if unknown else base.get(k))
                    for k, v in amounts.items()
                }
        return stable

    def _stable(self, value: Any, *, inherited: bool, history: bool = False) -> Any:
        """The part of an answer a replay must reproduce; None where nothing is. `history`: an
        answer that lists what the server holds (a balance's movements, a page of a list),
        whose lists are `$contains` of the items that name an object of this run (saved), and
        left out if none does; its pagination is left out."""
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
                if history and key == "pagination":
                    continue  # totals count every object of the server
                if history and isinstance(item, list):
                    # What the server holds: only the items naming an object of this run.
                    items = [self._stable(i, inherited=stable_key) for i in item]
                    ours = [i for i in items if "${" in repr(i)]
                    if ours:
                        kept[key] = {"$contains": ours}
                    continue
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


def _change(base: str, value: Any, recorded_base: Any) -> Any:
    """A cumulative amount as `${base + change}` (a number of any value where it is the base
    itself, or where the first read had no such amount)."""
    numbers = (int, float)
    if not isinstance(value, numbers) or isinstance(value, bool):
        return value
    if not isinstance(recorded_base, numbers) or isinstance(recorded_base, bool):
        return {"$type": "number"}
    from decimal import Decimal

    change = Decimal(str(value)) - Decimal(str(recorded_base))
    if change == 0:
        return "${" + base + "}"
    sign = "+" if change > 0 else "-"
    return "${" + f"{base} {sign} {abs(change)}" + "}"


def _unexpressible(detail: dict[str, Any]) -> str | None:
    """Why a logged request cannot be a step of a scenario file, or None."""
    for side in ("request", "response"):
        body = (detail.get(side) or {}).get("body") or {}
        if not isinstance(body, dict):
            return f"its {side} record is not an object"
        if side == "request" and body.get("truncated"):
            # The log keeps the first 64 KB: a replay would send a cut body.
            return f"its request body ({body.get('bytes')} bytes) was cut short in the log"
        text = body.get("text")
        if isinstance(text, str) and len(text) > MAX_BODY_TEXT:
            return f"its {side} body is {len(text):,} characters (at most {MAX_BODY_TEXT:,})"
        problem = _too_big(body.get("body"))
        if problem is not None:
            return f"its {side} body is {problem}"
    return None


def _too_big(value: Any) -> str | None:
    """Whether a JSON value is nested or sized past what a step may hold (iterative: the value
    may be nested a thousand deep)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    count = 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if depth > MAX_BODY_DEPTH:
            return f"nested deeper than {MAX_BODY_DEPTH} levels"
        if count > MAX_BODY_VALUES:
            return f"more than {MAX_BODY_VALUES:,} values"
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


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


def to_yaml(document: dict[str, Any], comments: dict[int, list[str]] | None = None) -> str:
    """The document as a scenario file: the schema comment, block style for the steps, flow
    style for the leaves, strings quoted where YAML 1.1 or 1.2 would read them otherwise;
    `comments[i]`: lines written before step i."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = '"' if ("${" in value or _looks_typed(value)) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)

    def dump(value: Any) -> str:
        return yaml.dump(
            value,
            Dumper=Dumper,
            sort_keys=False,
            default_flow_style=None,
            allow_unicode=True,
            width=100,
        )

    header = "# yaml-language-server: $schema=../payorch_cli/scenario/scenario.schema.json\n"
    if not comments:
        return header + dump(document)
    steps = document["steps"]
    text = dump({k: v for k, v in document.items() if k != "steps"}) + "steps:"
    text += "\n" if steps else " []\n"
    for index in range(len(steps) + 1):
        for line in comments.get(index, ()):
            # One line of printable characters, whatever the log held.
            printable = "".join(c if c.isprintable() else "?" for c in " ".join(line.split()))
            text += "# " + printable + "\n"
        if index < len(steps):
            text += dump([steps[index]])
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
