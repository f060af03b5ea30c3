"""`payorch record`'s builder: logged requests and delivered events, one at a time, to the
steps of a scenario (saves, `${name}` links, expectations, comments for what cannot be a step)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from payorch.vocabulary import API_PREFIX
from payorch_cli.durations import format_duration
from payorch_cli.record.values import (
    ADVANCE_PATH,
    BALANCE_PATH,
    COUNTRY_BY_CURRENCY,
    CUMULATIVE,
    ID_KEY,
    IDENTIFIER_PART,
    MADE_ID,
    MASK,
    NAME_BY_PREFIX,
    TEST_CARD,
    TEST_DOCUMENTS,
    TEST_PERSONAL,
    change_from,
    is_stable_key,
    is_volatile,
    unexpressible,
)
from payorch_cli.record.yaml import escape


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


class StepsBuilder:
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
        problem = detail.get("unreadable") or unexpressible(detail)
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
            call["raw"] = escape(request_body["text"])
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
        if part in self.ids or not MADE_ID.match(part):
            return self._use(part)
        # An id no recorded step returned: a var holding the recorded value, flagged.
        for name, value in self.vars.items():
            if value == part:
                return "${" + name + "}"
        base = next((n for prefix, n in NAME_BY_PREFIX if part.startswith(prefix)), "id")
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
            return "${run.id}-" + escape(value)
        return escape(value)

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
        if lowered in TEST_PERSONAL:
            # No path: each checkout session has its own, and the note is the same for all.
            self.notes.append(
                f"`{key}` was masked in the log; the scenario sends {TEST_PERSONAL[lowered]!r} "
                "instead"
            )
            return TEST_PERSONAL[lowered]
        if lowered == "secretkey" and path.endswith("/auth/token"):
            secret = self.identity.secret_of(self._publishable or "")
            if secret is not None:
                return secret
        env = "PAYORCH_RECORD_" + IDENTIFIER_PART.sub("_", key).upper()
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
            self.country = COUNTRY_BY_CURRENCY.get(body["currencyLocal"], self.country)

    def _use(self, text: str) -> str:
        """A string a request sends: `${name}` if it is (or holds, in a path) a server-made id."""
        found = self.ids.get(text)
        if found is not None:
            return "${" + self._name(found) + "}"
        return escape(text)

    def _name(self, found: _Id) -> str:
        if found.name is None:
            base = next(
                (name for prefix, name in NAME_BY_PREFIX if found.value.startswith(prefix)),
                None,
            ) or IDENTIFIER_PART.sub("_", found.key)
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
                    and ID_KEY.search(key)
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
        for key in CUMULATIVE:
            amounts, base = stable.get(key), first.get(key)
            if isinstance(amounts, dict) and isinstance(base, dict):
                stable[key] = {
                    k: change_from(f"{name}.{key}.{k}", v, None if unknown else base.get(k))
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
                if is_volatile(key, item):
                    continue
                stable_key = inherited or is_stable_key(key)
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
                    kept[key] = escape(item) if isinstance(item, str) else item
            return kept
        if isinstance(value, list):
            items = [self._stable(item, inherited=inherited) for item in value]
            if all(isinstance(item, (str, int, float, bool)) or item is None for item in value):
                return (
                    [escape(i) if isinstance(i, str) else i for i in value] if inherited else None
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
