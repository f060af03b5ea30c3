"""Webhooks compared (pure): the upstream's recorded deliveries against the events payorch
emitted during the replay, object by object.

Two worlds emit the events of different objects in their own interleaving (a provider callback
a few seconds later here, a poll there), so order is compared within one object only: the
events whose `data` names the same object (by the id map). Within an object, events pair by
type and occurrence (the 2nd `payment.completed` with the 2nd); an unpaired upstream event is a
webhook payorch did not send, an unpaired payorch event one it sent and the upstream did not, a
pair out of the upstream's order (outside the longest run in order) an order difference, and a
pair's payloads are compared as answers are (compare.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from payorch_cli.drift.compare import Difference, compare_values, shown
from payorch_cli.drift.ids import IdMap

# The object an event belongs to: a claim's events belong to its payment, so that the order of
# `chargeback.created` and `claim.opened` is compared.
OBJECT_KEYS = ("transactionId", "id", "refundId", "payoutId", "claimId", "sessionId")


@dataclass(frozen=True, slots=True)
class Event:
    seq: int  # upstream: the webhook record's seq; payorch: the last record replayed before it
    type: str
    body: Any


def object_of(body: Any) -> str | None:
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, dict):
        for key in OBJECT_KEYS:
            if isinstance(data.get(key), str):
                return str(data[key])
    return None


def _longest_in_order(positions: list[int]) -> set[int]:
    """Indexes (into `positions`) of one longest non-decreasing run: the pairs in order."""
    best: list[list[int]] = []
    for index, position in enumerate(positions):
        # Quadratic, and an object has a handful of events.
        earlier = [c for c in best if positions[c[-1]] <= position]
        chain = max(earlier, key=lambda c: len(c)) if earlier else []
        best.append([*chain, index])
    longest: list[int] = max(best, key=lambda c: len(c)) if best else []
    return set(longest)


def compare_events(upstream: list[Event], payorch: list[Event], ids: IdMap) -> list[Difference]:
    groups_up: dict[str, list[Event]] = defaultdict(list)
    groups_pay: dict[str, list[Event]] = defaultdict(list)
    for event in upstream:
        name = object_of(event.body) or "?"
        groups_up[ids.values.get(name, name)].append(event)
    for event in payorch:
        groups_pay[object_of(event.body) or "?"].append(event)
    found: list[Difference] = []
    for key in list(groups_up) + [k for k in groups_pay if k not in groups_up]:
        found.extend(_compare_object(groups_up.get(key, []), groups_pay.get(key, [])))
    return sorted(found, key=lambda d: (d.seq, d.field))


def created(event: Event) -> str:
    at = event.body.get("createdAt") if isinstance(event.body, dict) else None
    return at if isinstance(at, str) else ""


def _compare_object(ups: list[Event], pays: list[Event]) -> list[Difference]:
    # In the order each side says it emitted them (`createdAt`, then arrival): deliveries are
    # not ordered, and events of one instant have no order between them, so only a pair whose
    # instants are in the other order differs.
    ups, pays = sorted(ups, key=created), sorted(pays, key=created)
    instants = sorted({created(event) for event in pays})
    found: list[Difference] = []
    seen: dict[str, int] = defaultdict(int)
    slots: dict[tuple[str, int], int] = {}
    for index, event in enumerate(pays):
        slots[(event.type, seen[event.type])] = index
        seen[event.type] += 1
    seen.clear()
    paired: list[tuple[Event, int]] = []
    used: set[int] = set()
    for event in ups:
        slot = slots.get((event.type, seen[event.type]))
        seen[event.type] += 1
        where = f"webhook {event.type}"
        if slot is None:
            found.append(Difference(event.seq, where, "(webhook)", event.type, "(absent)"))
            continue
        used.add(slot)
        paired.append((event, slot))
        for field, a, b in compare_values(event.body, pays[slot].body):
            found.append(Difference(event.seq, where, f"webhook.{field}", shown(a), shown(b)))
    in_order = _longest_in_order([instants.index(created(pays[slot])) for _, slot in paired])
    for index, (event, slot) in enumerate(paired):
        if index not in in_order:
            before = [e.type for e, s in paired if s < slot]
            payorch_place = f"after {before[-1]}" if before else "first"
            found.append(
                Difference(
                    event.seq,
                    f"webhook {event.type}",
                    "(order)",
                    f"#{index + 1} of the object's events",
                    payorch_place,
                )
            )
    by_slot = sorted((slot, event.seq) for event, slot in paired)
    for index, event in enumerate(pays):
        if index not in used:
            # Told at the upstream's webhook payorch sent it after (or before), when there is
            # one: the moment it arrived here depends on the replay's timing.
            earlier = [seq for slot, seq in by_slot if slot < index]
            later = [seq for slot, seq in by_slot if slot > index]
            seq = earlier[-1] if earlier else later[0] if later else event.seq
            found.append(
                Difference(seq, f"webhook {event.type}", "(webhook)", "(absent)", event.type)
            )
    return found
