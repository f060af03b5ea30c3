"""Simulated providers (`GET /_sim/providers`) in words, shared by `payorch providers` and the
TUI's Providers screen: what a provider does now, its incidents and what it has done.

Plain strings only (no rich at import): `payorch providers --json` builds none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from payorch.vocabulary import ACCEPTING_BEHAVIOUR

PRODUCTION_ONLY = (
    "Behaviours apply to PRODUCTION keys only: the sandbox cascade always accepts "
    "(sandbox outcomes come from `payorch simulate` and the Sandbox-Simulate header)."
)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _seconds(value: Any) -> str:
    from payorch_cli.durations import format_duration

    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return "0s"
    return format_duration(float(value))


def clock_time(stamp: Any) -> str:
    """`12:10:00` out of `2026-05-04T12:10:00.000Z`; the date too when it is not today's
    simulated date is more than a table cell can hold, so the time is what is shown."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return "?"
    return stamp[11:19]


def behaviour_text(provider: dict[str, Any]) -> str:
    """What the provider does to a production charge now: `decline insufficient_funds`,
    `accept, 30% decline (insufficient_funds, seed 7)`, `outage (incident)`..."""
    if provider.get("appliesTo") == "sandbox":
        return f"{ACCEPTING_BEHAVIOUR} (sandbox: always)"
    configured = str(provider.get("behaviour") or "?")
    now = str(provider.get("effectiveBehaviour") or configured)
    text = now
    active = [i for i in _incidents(provider) if i.get("active")]
    reason = provider.get("declineReason")
    if active:
        incident_reason = active[0].get("declineReason")
        if now == "decline" and incident_reason:
            text += f" {incident_reason}"
        text += f" (incident; set: {configured})" if configured != now else " (incident)"
    elif now == "decline" and reason:
        text += f" {reason}"
    rate = provider.get("declineRate")
    if (
        isinstance(rate, int | float)
        and not isinstance(rate, bool)
        and rate > 0
        and now != "decline"
    ):
        why = [str(reason)] if reason else []
        if provider.get("seed") is not None:
            why.append(f"seed {provider['seed']}")
        detail = f" ({', '.join(why)})" if why else ""
        text += f", {rate:.0%} declined{detail}"
    latency = provider.get("latencySeconds")
    if isinstance(latency, int | float) and not isinstance(latency, bool) and latency > 0:
        text += f", +{_seconds(latency)} latency"
    return text


def now_text(provider: dict[str, Any]) -> str:
    """The behaviour in force, in a word or two: `outage`, `accept 30% decl.`."""
    now = str(provider.get("effectiveBehaviour") or provider.get("behaviour") or "?")
    rate = provider.get("declineRate")
    if (
        isinstance(rate, int | float)
        and not isinstance(rate, bool)
        and rate > 0
        and now == ACCEPTING_BEHAVIOUR
    ):
        return f"{now} {rate:.0%} decl."
    return now


def callback_text(provider: dict[str, Any]) -> str:
    """`30s paid`, `none (poll)`, `30s failed ×2`."""
    callback = _obj(provider.get("callback"))
    after = callback.get("afterSeconds")
    if after is None:
        return "none (poll)" if provider.get("kind") != "payout" else "none"
    if after == 0 and provider.get("kind") == "payout":
        return f"at dispatch {callback.get('outcome') or 'completed'}"
    text = f"{_seconds(after)} {callback.get('outcome') or 'paid'}"
    if callback.get("mode") == "duplicate":
        text += " ×2"
    return text


def _incidents(provider: dict[str, Any]) -> list[dict[str, Any]]:
    found = provider.get("incidents")
    return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []


def incident_text(incident: dict[str, Any]) -> str:
    """`outage until 12:10:00` (active) or `outage 12:05:00–12:15:00` (scheduled)."""
    behaviour = str(incident.get("behaviour") or "?")
    if incident.get("declineReason"):
        behaviour += f" {incident['declineReason']}"
    if incident.get("active"):
        return f"{behaviour} until {clock_time(incident.get('endsAt'))}"
    return (
        f"{behaviour} {clock_time(incident.get('startsAt'))}–{clock_time(incident.get('endsAt'))}"
    )


def incidents_text(provider: dict[str, Any]) -> str:
    """The active incident first, then the scheduled ones; `-` when there is none."""
    incidents = sorted(
        _incidents(provider), key=lambda i: (not i.get("active"), str(i.get("startsAt")))
    )
    return "; ".join(incident_text(i) for i in incidents) or "-"


def counts_text(provider: dict[str, Any]) -> str:
    """`12: 9 ok, 2 declined, 1 down · cb 9 (+1 ignored)`: what the provider has done (charges,
    or payout dispatches, by answer; callbacks sent, of which ignored)."""
    n = _counter(provider)
    if not n("charges") and not n("callbacksSent"):
        return "-"
    parts = [f"{n('accepted')} ok"]
    if n("declined"):
        parts.append(f"{n('declined')} declined")
    if n("unavailable"):
        parts.append(f"{n('unavailable')} down")
    if n("timedOut"):
        parts.append(f"{n('timedOut')} timed out")
    if n("noInstructions"):
        parts.append(f"{n('noInstructions')} no instr.")
    text = f"{n('charges')}: {', '.join(parts)}"
    if n("callbacksSent") or n("callbacksIgnored"):
        text += f" · cb {n('callbacksSent')}"
        if n("callbacksIgnored"):
            text += f" (+{n('callbacksIgnored')} ignored)"
    return text


def is_disturbed(provider: dict[str, Any]) -> bool:
    """Not accepting every production charge right now (shown in a warning colour)."""
    rate = provider.get("declineRate")
    return (
        provider.get("effectiveBehaviour", provider.get("behaviour")) != ACCEPTING_BEHAVIOUR
        or (isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0)
        or any(i.get("active") for i in _incidents(provider))
    )


def _counter(provider: dict[str, Any]) -> Callable[[str], int]:
    """A provider's count by name; 0 for one it does not have."""
    counts = _obj(provider.get("counts"))

    def n(name: str) -> int:
        value = counts.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return n


def _plural(count: int, noun: str, nouns: str) -> str:
    return f"{count} {noun if count == 1 else nouns}"


def counts_sentence(provider: dict[str, Any]) -> str:
    """`12 charges: 9 accepted, 2 declined, 1 unavailable; 9 callbacks sent (1 more ignored)`:
    counts_text in words, for a view with room for them."""
    n = _counter(provider)
    if not n("charges") and not n("callbacksSent"):
        return "nothing yet"
    payout = provider.get("kind") == "payout"
    text = _plural(n("charges"), *(("dispatch", "dispatches") if payout else ("charge", "charges")))
    answers = [f"{n(key)} {word}" for key, word in _ANSWERS if n(key) or key == "accepted"]
    text += ": " + ", ".join(answers)
    if n("callbacksSent") or n("callbacksIgnored"):
        text += f"; {_plural(n('callbacksSent'), 'callback', 'callbacks')} sent"
        if n("callbacksIgnored"):
            text += f" ({n('callbacksIgnored')} more ignored)"
    return text


_ANSWERS = (
    ("accepted", "accepted"),
    ("declined", "declined"),
    ("unavailable", "unavailable"),
    ("timedOut", "timed out"),
    ("noInstructions", "without instructions"),
)


def providers_view(providers: list[dict[str, Any]], title: str = "providers") -> Any:
    """One line per provider (id, kind, behaviour now, callback), what it did under it when it
    did anything; `providers show ID` has one in full."""
    from rich.console import Group
    from rich.text import Text

    from payorch_cli.render.layout import Column, Columns

    columns = (
        Column("id", style="cyan"),
        Column("kind"),
        Column("behaviour now"),
        Column("callback"),
        Column("rails", optional=True),
        Column("incidents", spill=True),
        Column("did", spill=True),
    )
    rows = [
        (
            str(provider.get("id")),
            str(provider.get("kind") or "?"),
            now_text(provider),
            callback_text(provider),
            rails_text(provider),
            "; ".join(incident_lines(provider)),
            "" if counts_text(provider) == "-" else counts_sentence(provider),
        )
        for provider in providers
    ]
    hint = "`payorch providers show ID` for one in full, --json for every field."
    return Group(
        Text(title, style="bold"),
        Columns(columns, rows),
        Text(PRODUCTION_ONLY, style="dim"),
        Text(hint, style="dim"),
    )


def ended_phrase(incident: dict[str, Any]) -> str:
    """What ending an incident did: `outage ended at 12:04:10` or `decline cancelled`."""
    if incident.get("ended") == "cancelled":
        return f"{incident.get('behaviour')} cancelled"
    return f"{incident.get('behaviour')} ended at {clock_time(incident.get('endsAt'))}"


def ended_text(ended: list[dict[str, Any]]) -> str:
    """`outage ended at 12:00:00 (simulated)`, `decline cancelled`, or no incident to end."""
    if not ended:
        return "no incident in force or scheduled: nothing to end"
    parts = [
        ended_phrase(i) + ("" if i.get("ended") == "cancelled" else " (simulated)") for i in ended
    ]
    return "; ".join(parts)


def rails_text(provider: dict[str, Any]) -> str:
    rails = provider.get("rails")
    return ", ".join(map(str, rails)) if isinstance(rails, list) else ""


def provider_table(provider: dict[str, Any]) -> Any:
    """One provider, a field a line."""
    from payorch_cli.render.layout import Detail

    rows = [
        ("kind", str(provider.get("kind") or "?")),
        ("rails", rails_text(provider)),
        ("behaviour now", behaviour_text(provider)),
    ]
    # One line per incident, its id first: the id `payorch providers end ID INCIDENT` asks for.
    rows += [("incident", line) for line in incident_lines(provider)] or [("incidents", "none")]
    rows += [("did", counts_sentence(provider)), ("callback", callback_text(provider))]
    return Detail(f"provider {provider.get('id')} ({provider.get('name')})", rows)


def incident_lines(provider: dict[str, Any]) -> list[str]:
    """`inc_…  outage until 12:10:00`, the active incident first, then the scheduled ones."""
    incidents = sorted(
        _incidents(provider), key=lambda i: (not i.get("active"), str(i.get("startsAt")))
    )
    return [f"{i.get('id', '?')}  {incident_text(i)}" for i in incidents]
