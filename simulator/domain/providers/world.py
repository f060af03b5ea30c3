"""The provider world: each simulated provider's live behaviour, scriptable on the simulated clock.

A provider's behaviour is its fixture (providers.yaml) with the operator's overrides (PATCH
/_sim/providers/{id}) on top, and, for a window of simulated time, an incident's behaviour on top
of that. Behaviour is evaluated from the clock when a call is made, so an incident starts and ends
by itself: no job runs at its edges. It applies to production calls only: the sandbox cascade
always accepts (spec, POST /payments rule 6) and sandbox payouts are driven by simulate.

What is kept per provider (one document of the `providers` table, so it survives a restart): the
overrides, the incidents not yet over, the decline-rate draw counter and the counts. `reset` drops
them all: the providers are their fixtures again.

Decisions (docs/decisions.md, "The provider world"): the platform's timeout, what a decline rate
draws, what the counts count.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from simulator.clock import isoformat
from simulator.domain.catalog import (
    Provider,
)
from simulator.domain.errors import ApiError
from simulator.domain.ids import new_id
from simulator.domain.ports import Table
from simulator.domain.providers.request import parse_incident_request, parse_provider_patch

# The platform gives a provider this long to answer a call, then records it as timed out and
# moves to the next provider of the cascade (the spec leaves the figure open).
PROVIDER_TIMEOUT_SECONDS = 30.0
# A duplicated callback arrives this long after the first delivery.
DUPLICATE_CALLBACK_GAP = 1.0
# The provider that serves the sandbox built-ins: the sandbox cascade always accepts, so it has
# nothing to script.
SANDBOX_PROVIDER_ID = "prv_sandbox"

DEFAULT_REASON = {"payin": "do_not_honor", "payout": "rejected_by_provider"}

ReplyOutcome = Literal["accepted", "declined", "unavailable", "timed_out", "no_instructions"]
# What a provider answers a call under each behaviour of its kind (payorch.vocabulary's table):
# accepted with its callback plan, declined with the reason in force, unavailable (no answer),
# timed out (as any provider slower than the platform's timeout), no instructions.
ANSWERS: dict[str, dict[str, ReplyOutcome]] = {
    "payin": {
        "accept": "accepted",
        "decline": "declined",
        "outage": "unavailable",
        "no_instructions": "no_instructions",
        "timeout": "timed_out",
    },
    "payout": {"accept": "accepted", "reject": "declined", "outage": "unavailable"},
}
TIMED_OUT = f"no answer within {PROVIDER_TIMEOUT_SECONDS:g} s"
COUNTS = (
    "charges",
    "accepted",
    "declined",
    "unavailable",
    "timedOut",
    "noInstructions",
    "callbacksSent",
    "callbacksIgnored",
)
# An answer's outcome -> the count it adds to (besides `charges`).
_COUNTED = {
    "accepted": "accepted",
    "declined": "declined",
    "unavailable": "unavailable",
    "timed_out": "timedOut",
    "no_instructions": "noInstructions",
}


@dataclass(frozen=True, slots=True)
class CallbackPlan:
    """What the provider will do after accepting: call back `after_seconds` later (None: never)
    reporting `outcome`, once or twice."""

    after_seconds: float | None
    outcome: str
    mode: str


@dataclass(frozen=True, slots=True, eq=False)
class ProviderReply:
    """One production call to a provider, as the platform saw it.

    Compared and hashed by identity: a provider that accepts hands out one answer until it is
    scripted again (`ProviderState.accepts`), which callers may key a cache on."""

    provider: Provider
    outcome: ReplyOutcome
    reason: str | None = None
    callback: CallbackPlan | None = None


@dataclass(slots=True)
class Incident:
    id: str
    behaviour: str
    decline_reason: str | None
    starts_at: float
    ends_at: float

    def active(self, now: float) -> bool:
        return self.starts_at <= now < self.ends_at

    def as_doc(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "behaviour": self.behaviour,
            "declineReason": self.decline_reason,
            "startsAt": self.starts_at,
            "endsAt": self.ends_at,
        }

    def view(self, now: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "behaviour": self.behaviour,
            "declineReason": self.decline_reason,
            "startsAt": isoformat(self.starts_at),
            "endsAt": isoformat(self.ends_at),
            "active": self.active(now),
        }


@dataclass(slots=True)
class ProviderState:
    fixture: Provider
    overrides: dict[str, Any] = field(default_factory=dict)
    incidents: list[Incident] = field(default_factory=list)
    draws: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    # The fixture with the overrides applied, what it answers a charge it takes (None when it
    # takes none) and what it answers a pay-in charge with no incident or draw in play: rebuilt
    # by `script` when the overrides change.
    live: Provider = field(init=False)
    accepts: ProviderReply | None = field(init=False)
    scripted: ProviderReply | None = field(init=False)
    # `scripted` when every charge gets it, whatever the clock or the draws say (no incident, no
    # decline rate): the production hot path, one lookup.
    always: ProviderReply | None = field(init=False)

    def __post_init__(self) -> None:
        self.script(self.overrides)

    def script(self, overrides: dict[str, Any]) -> None:
        """Take these overrides: the live provider and its answers follow."""
        self.overrides = overrides
        live = self.live = _apply(self.fixture, overrides)
        accepting = ANSWERS[live.kind][live.behaviour] == "accepted" and not _too_slow(live)
        self.accepts = (
            ProviderReply(live, "accepted", callback=_callback_plan(live)) if accepting else None
        )
        self.scripted = (
            _payin_answer(live, live.behaviour, live.decline_reason, self.accepts)
            if live.kind == "payin"
            else None
        )
        self._settle()

    def set_incidents(self, incidents: list[Incident]) -> None:
        self.incidents = incidents
        self._settle()

    def _settle(self) -> None:
        quiet = not self.incidents and self.live.decline_rate <= 0
        self.always = self.scripted if quiet else None

    def incident_at(self, now: float) -> Incident | None:
        """The incident in force at `now`: the latest scheduled of those active."""
        for incident in reversed(self.incidents):
            if incident.active(now):
                return incident
        return None

    def as_doc(self) -> dict[str, Any]:
        return {
            "id": self.fixture.id,
            "overrides": self.overrides,
            "incidents": [i.as_doc() for i in self.incidents],
            "draws": self.draws,
            "counts": self.counts,
        }


class ProviderWorld:
    def __init__(
        self,
        fixtures: Iterable[Provider],
        table: Table[Any],
        now: Callable[[], float],
        rng: random.Random,
    ) -> None:
        self._fixtures = {p.id: p for p in fixtures}
        self._table = table
        self._now = now
        self._rng = rng
        self._states: dict[str, ProviderState] = {}
        # Providers whose document changed since it was last written: a call made in a request
        # that ends in an error is still a call (its batch is rolled back; the handler writes
        # these again in a batch of their own), see `flush`.
        self._unsaved: set[str] = set()
        # Providers whose counts moved since their document was last written. Counts are
        # statistics: journalling them with every charge cost production POST /payments
        # several percent, so they are written with the provider's next document, before a
        # saved state is taken, and when the server stops (a SIGKILL loses the latest ones).
        self._counted: set[str] = set()
        self.load()

    # -- state ---------------------------------------------------------------------------------

    def load(self) -> None:
        """Build every provider's state from its fixture and its stored document."""
        self._states = {pid: ProviderState(p) for pid, p in self._fixtures.items()}
        self._unsaved.clear()
        self._counted.clear()
        for doc in self._table.scan():
            state = self._states.get(doc.get("id", ""))
            if state is None:
                continue  # a provider the fixtures no longer have
            state.script(dict(doc.get("overrides") or {}))
            state.set_incidents(
                [
                    Incident(
                        i["id"], i["behaviour"], i.get("declineReason"), i["startsAt"], i["endsAt"]
                    )
                    for i in doc.get("incidents") or []
                ]
            )
            state.draws = int(doc.get("draws") or 0)
            state.counts = {**dict.fromkeys(COUNTS, 0), **(doc.get("counts") or {})}

    @property
    def has_unsaved(self) -> bool:
        return bool(self._unsaved)

    def flush(self) -> None:
        """Write the documents of the providers changed since the last flush (in the caller's
        batch)."""
        if not self._unsaved:
            return
        for provider_id in sorted(self._unsaved):
            self._table.put(provider_id, self._states[provider_id].as_doc())
        self._counted -= self._unsaved
        self._unsaved.clear()

    def flush_counts(self) -> None:
        """Write the counts not yet written too (in the caller's batch, if any)."""
        self._unsaved |= self._counted
        self.flush()

    def forget_write(self, provider_id: str, _restored: Any = None) -> None:
        """A batch holding this provider's document was rolled back: write it again."""
        if provider_id in self._states:
            self._unsaved.add(provider_id)

    def reset(self) -> None:
        """Every provider back to its fixture: no overrides, incidents, draws or counts."""
        for doc in list(self._table.scan()):
            self._table.delete(doc["id"])
        self._states = {pid: ProviderState(p) for pid, p in self._fixtures.items()}
        self._unsaved.clear()
        self._counted.clear()

    # -- reads ---------------------------------------------------------------------------------

    def fixture(self, provider_id: str) -> Provider:
        return self._fixtures[provider_id]

    def live(self, provider_id: str) -> Provider:
        """The provider as scripted now (fixture and overrides; incidents are not applied)."""
        return self._states[provider_id].live

    def payout_provider(self) -> Provider | None:
        """The provider production payouts are sent to (the first of kind payout; a fixture set
        with none keeps the spec's simulated driver, which completes every payout at once)."""
        for state in self._states.values():
            if state.fixture.kind == "payout":
                return state.live
        return None

    def payout_provider_id(self) -> str | None:
        provider = self.payout_provider()
        return provider.id if provider else None

    def state(self, provider_id: str) -> ProviderState:
        state = self._states.get(provider_id)
        if state is None:
            raise ApiError(
                "provider_not_found",
                f"No provider {provider_id!r}; GET /_sim/providers lists them.",
                param="id",
                details={"providerId": provider_id},
            )
        return state

    def effective(self, provider_id: str, now: float | None = None) -> tuple[str, str | None]:
        """The behaviour (and decline reason) a call meets at `now`, incidents applied."""
        state = self._states[provider_id]
        incident = state.incident_at(self._now() if now is None else now)
        if incident is not None:
            return incident.behaviour, incident.decline_reason
        return state.live.behaviour, state.live.decline_reason

    def view(self, provider_id: str) -> dict[str, Any]:
        state = self.state(provider_id)
        now = self._now()
        live = state.live
        behaviour, _ = self.effective(provider_id, now)
        return {
            "id": live.id,
            "name": live.name,
            "kind": live.kind,
            "rails": list(live.rails),
            "behaviour": live.behaviour,
            "declineReason": live.decline_reason,
            "declineRate": live.decline_rate,
            "seed": live.seed,
            "latencySeconds": live.latency_seconds,
            "callback": {
                "afterSeconds": live.callback_after_seconds,
                "outcome": live.callback_outcome,
                "mode": live.callback_mode,
            },
            "effectiveBehaviour": behaviour,
            "incidents": [i.view(now) for i in state.incidents if i.ends_at > now],
            "counts": dict(state.counts),
            "appliesTo": "sandbox" if live.id == SANDBOX_PROVIDER_ID else "production",
        }

    def views(self) -> list[dict[str, Any]]:
        return [self.view(provider_id) for provider_id in self._states]

    # -- production calls ----------------------------------------------------------------------

    def charge(self, provider_id: str) -> ProviderReply:
        """A production pay-in call to the provider: what it answers now, counted."""
        state = self._states[provider_id]
        # A provider with no incident and no decline rate answers what its script says, the
        # same answer every time: nothing to evaluate on the production hot path.
        reply = state.always or self._evaluate(state)
        self._count(state, reply.outcome)
        return reply

    def _evaluate(self, state: ProviderState) -> ProviderReply:
        """What the provider answers a charge now, its incidents and decline-rate draws
        applied."""
        live = state.live
        behaviour, reason = self.effective(live.id)
        accepting = ANSWERS["payin"][behaviour] == "accepted"
        if accepting and not _too_slow(live) and self._draw_declines(state):
            return ProviderReply(live, "declined", live.decline_reason or DEFAULT_REASON["payin"])
        return _payin_answer(live, behaviour, reason, state.accepts)

    def dispatch_payout(self, provider_id: str, *, refused: str | None = None) -> ProviderReply:
        """A production payout's dispatch to the provider: what it answers now, counted.
        `refused`: the recipient is one the method's fixture always rejects, with that reason."""
        state = self._states[provider_id]
        live = state.live
        behaviour, reason = self.effective(provider_id)
        outcome = ANSWERS["payout"][behaviour]
        if outcome == "unavailable":
            reply = ProviderReply(live, "unavailable", "provider_unavailable")
        elif outcome == "declined":
            reply = ProviderReply(live, "declined", reason or DEFAULT_REASON["payout"])
        elif refused is not None:
            reply = ProviderReply(live, "declined", refused)
        else:
            reply = ProviderReply(live, "accepted", callback=_callback_plan(live))
        self._count(state, reply.outcome)
        return reply

    def callback_delivered(self, provider_id: str | None, *, applied: bool) -> None:
        """Count a callback the provider sent (a duplicate or a late one too)."""
        state = self._states.get(provider_id or "")
        if state is None:
            return
        state.counts["callbacksSent"] += 1
        if not applied:
            state.counts["callbacksIgnored"] += 1
        self._counted.add(state.fixture.id)

    def _draw_declines(self, state: ProviderState) -> bool:
        rate = state.live.decline_rate
        if rate <= 0:
            return False
        # Draw i of a provider depends on (seed, i) alone: the same charges are declined on
        # every run and after a restart, whatever else the server does in between.
        draw = random.Random(f"{state.live.seed}:{state.draws}").random()
        state.draws += 1
        self._unsaved.add(state.fixture.id)  # the next draw must survive a restart
        return draw < rate

    def _count(self, state: ProviderState, outcome: str) -> None:
        counts = state.counts
        counts["charges"] += 1
        counts[_COUNTED[outcome]] += 1
        self._counted.add(state.fixture.id)

    # -- the operator's scripting -------------------------------------------------------------

    def patch(self, provider_id: str, body: dict[str, Any]) -> dict[str, Any]:
        state = self.state(provider_id)
        _scriptable(state.fixture)
        kind = state.fixture.kind
        changes = parse_provider_patch(body, kind)
        overrides = {**state.overrides, **changes}
        live = _apply(state.fixture, overrides)
        if _declines(kind, live.behaviour) and live.decline_reason is None:
            overrides["declineReason"] = DEFAULT_REASON[kind]
        state.script(overrides)
        if "seed" in changes or "declineRate" in changes:
            # A new rate or seed starts its draws afresh: `set` then N charges gives the same
            # outcomes on every server, whatever it drew before.
            state.draws = 0
        self._unsaved.add(provider_id)
        return self.view(provider_id)

    def schedule_incident(self, provider_id: str, body: dict[str, Any]) -> dict[str, Any]:
        state = self.state(provider_id)
        _scriptable(state.fixture)
        kind = state.fixture.kind
        request = parse_incident_request(body, kind)
        behaviour, duration, starts_in = request.behaviour, request.duration, request.starts_in
        reason = request.decline_reason
        if _declines(kind, behaviour) and reason is None:
            reason = state.live.decline_reason or DEFAULT_REASON[kind]
        now = self._now()
        incident = Incident(
            new_id(self._rng, "inc_"),
            behaviour,
            reason,
            now + starts_in,
            now + starts_in + duration,
        )
        # Incidents already over are dropped as a new one is written: the document stays small.
        state.set_incidents([i for i in state.incidents if i.ends_at > now] + [incident])
        self._unsaved.add(provider_id)
        return incident.view(now)

    def end_incident(self, provider_id: str, incident_id: str) -> dict[str, Any]:
        """End one incident now: an active one's window closes at the clock's now, a scheduled
        one is cancelled (it never starts). Only the incidents the provider view lists (not yet
        over) can be ended: any other id, an incident already over included, is 404."""
        state = self.state(provider_id)
        _scriptable(state.fixture)
        now = self._now()
        target = next((i for i in state.incidents if i.id == incident_id and i.ends_at > now), None)
        if target is None:
            raise ApiError(
                "incident_not_found",
                f"{provider_id} has no incident {incident_id!r} in force or scheduled (one "
                "already over is forgotten); GET /_sim/providers/{id} lists its incidents.",
                param="incidentId",
                details={"providerId": provider_id, "incidentId": incident_id},
            )
        return self._end(provider_id, state, [target], now)[0]

    def end_incidents(self, provider_id: str) -> list[dict[str, Any]]:
        """End every incident of the provider now (the active ones end, the scheduled ones are
        cancelled): the provider is back to its scripted behaviour. None to end is no error."""
        state = self.state(provider_id)
        _scriptable(state.fixture)
        now = self._now()
        return self._end(provider_id, state, [i for i in state.incidents if i.ends_at > now], now)

    def _end(
        self, provider_id: str, state: ProviderState, ending: list[Incident], now: float
    ) -> list[dict[str, Any]]:
        ended: list[dict[str, Any]] = []
        for incident in ending:
            if incident.active(now):
                view = replace(incident, ends_at=now).view(now)
                view["ended"] = "early"
            else:
                view = incident.view(now)
                view["ended"] = "cancelled"
            ended.append(view)
        # The ended ones and those over are dropped from the document: with none left the
        # provider is back on the one-lookup answer (`ProviderState.always`) at once.
        gone = {i.id for i in ending}
        state.set_incidents([i for i in state.incidents if i.ends_at > now and i.id not in gone])
        if ending:
            self._unsaved.add(provider_id)
        return ended


# ------------------------------------------------------------------------------- helpers


def _apply(fixture: Provider, overrides: dict[str, Any]) -> Provider:
    if not overrides:
        return fixture
    names = {
        "behaviour": "behaviour",
        "declineReason": "decline_reason",
        "declineRate": "decline_rate",
        "seed": "seed",
        "latencySeconds": "latency_seconds",
        "afterSeconds": "callback_after_seconds",
        "outcome": "callback_outcome",
        "mode": "callback_mode",
    }
    return replace(fixture, **{names[key]: value for key, value in overrides.items()})


def _payin_answer(
    live: Provider, behaviour: str, reason: str | None, accepts: ProviderReply | None
) -> ProviderReply:
    """A pay-in provider's answer to a charge under `behaviour` (a decline-rate draw aside)."""
    outcome = ANSWERS["payin"][behaviour]
    if outcome == "unavailable":
        return ProviderReply(live, "unavailable")
    if outcome == "timed_out" or _too_slow(live):
        return ProviderReply(live, "timed_out", TIMED_OUT)
    if outcome == "declined":
        return ProviderReply(live, "declined", reason or DEFAULT_REASON["payin"])
    if outcome == "accepted":
        # An incident may make a provider scripted otherwise accept: its answer is built here.
        return accepts or ProviderReply(live, "accepted", callback=_callback_plan(live))
    return ProviderReply(live, outcome)


def _declines(kind: str, behaviour: str) -> bool:
    """The behaviour's answers carry a decline reason (its own, else the kind's default)."""
    return ANSWERS[kind][behaviour] == "declined"


def _too_slow(provider: Provider) -> bool:
    return provider.latency_seconds is not None and (
        provider.latency_seconds > PROVIDER_TIMEOUT_SECONDS
    )


def _callback_plan(provider: Provider) -> CallbackPlan:
    after = provider.callback_after_seconds
    return CallbackPlan(
        None if after is None else float(after), provider.callback_outcome, provider.callback_mode
    )


def _scriptable(provider: Provider) -> None:
    if provider.id == SANDBOX_PROVIDER_ID:
        raise ApiError(
            "invalid_request",
            f"{provider.id} serves the sandbox built-in methods, and the sandbox cascade always "
            "accepts (outcomes come from simulate and Sandbox-Simulate): provider behaviour "
            "applies to production keys only. Script a production provider instead.",
            param="id",
            details={"providerId": provider.id, "appliesTo": "sandbox"},
        )
