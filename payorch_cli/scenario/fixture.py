"""What the `payorch` pytest fixture hands a test: one simulator and the tools to drive it.

def test_refund_webhook(payorch):
    tx = payorch.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
    payorch.client.post(f"/payments/{tx['transactionId']}/simulate", {"action": "paid"})
    event = payorch.events.wait_for("payment.completed", {"data": {"id": tx["transactionId"]}})
    payorch.advance("2d")

def test_from_a_prepared_world(payorch):
    payorch.save("ready")            # once the world is prepared
    ...
    payorch.restore("ready")         # back to it, in a few tens of milliseconds
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from payorch_cli.client import Client
from payorch_cli.credentials import Credential
from payorch_cli.durations import parse_duration
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.receiver import Delivery, Receiver


def _matcher(match: Any) -> Any:
    """The scenario matchers for a Python value (via YAML, so `$regex` etc. work the same)."""
    import yaml

    from payorch_cli.scenario.matchers import compile_matcher
    from payorch_cli.scenario.source import compose

    return compile_matcher(compose(yaml.safe_dump(match), "<wait_for>"))


@dataclass
class Events:
    """Deliveries to a local endpoint subscribed to every event as the default credential;
    each one's signature is verified with payorch.webhooks.verify."""

    receiver: Receiver
    webhook_id: str
    secret: str
    consumed: set[int] = field(default_factory=set)

    @property
    def received(self) -> list[dict[str, Any]]:
        return [d.envelope for d in self.receiver.deliveries if d.envelope is not None]

    def wait_for(
        self, event_type: str, match: Any = None, timeout: float | str = 5.0
    ) -> dict[str, Any]:
        """The first not-yet-returned event of that type whose envelope contains `match`
        (scenario matching rules); AssertionError listing what arrived if none in time."""
        matcher = _matcher(match) if match is not None else None
        seconds = parse_duration(timeout)

        def find() -> Delivery | None:
            for index, delivery in enumerate(self.receiver.deliveries):
                if index in self.consumed or delivery.event_type != event_type:
                    continue
                envelope = delivery.envelope or {}
                if matcher is None or not matcher.check(envelope, "event", {}):
                    self.consumed.add(index)
                    return delivery
            return None

        found = self.receiver.wait(find, seconds)
        if found is None:
            seen = [f"{d.event_type} {d.event_id}" for d in self.receiver.deliveries]
            wanted = f"{event_type} event" if match is None else f"{event_type} matching {match!r}"
            raise AssertionError(
                f"no {wanted} within {seconds:g} s (new ones only: each event is returned "
                f"once); received: {', '.join(seen) or 'nothing'}"
            )
        if found.verified is False:
            raise AssertionError(f"{event_type} arrived with a bad signature: {found.problem}")
        assert found.envelope is not None
        return found.envelope


class Payorch:
    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        stop: Any = None,
        default: Credential | None = None,
        namespace: str | None = None,
    ) -> None:
        self.base_url = base_url
        self.keys = credentials
        self.default: Credential = default or credentials.default(None)
        # The namespace this handle works in (`payorch_namespace`); None: the server's default.
        self.namespace = namespace
        self.client = Client(base_url, self.default.key, tool=None)  # the user's own test
        self._stop = stop
        self._events: Events | None = None
        self._clients: list[Client] = [self.client]

    @classmethod
    def start(cls, base_url: str | None, credentials: Credentials) -> Payorch:
        if base_url is not None:
            handle = cls(base_url, credentials)
            handle.listen()
            return handle
        from payorch_cli.scenario.host import host

        simulator = host().start()
        handle = cls(simulator.base_url, credentials, simulator.stop)
        handle.listen()
        return handle

    def as_(self, name: str) -> Client:
        """A client acting as another credential (`shp_lverde_loja`, `…/production`, a key)."""
        client = Client(self.base_url, self.keys.resolve(name).key, tool=None)
        self._clients.append(client)
        return client

    def advance(self, duration: str | float) -> dict[str, Any]:
        return self.client.post("/_sim/clock/advance", {"seconds": parse_duration(duration)})

    def save(self, name: str, *, overwrite: bool = True) -> dict[str, Any]:
        """Save the server's whole state as `name` (replacing one of that name unless
        `overwrite=False`); `restore(name)` puts it back."""
        return self.client.save_state(name, overwrite=overwrite)

    def restore(self, name: str) -> dict[str, Any]:
        """Put the server back to the saved state `name` (POST /_sim/state/{name}/restore).
        `events` then waits for the restored world's events only; its subscription is made
        again if the saved state does not hold it."""
        restored = self.client.restore_state(name)
        if self._events is not None:
            self._follow_restore(self._events)
        return restored

    def _follow_restore(self, events: Events) -> None:
        from payorch_cli.client import ApiError

        # What arrived before belongs to a world that is gone.
        events.consumed.update(range(len(events.receiver.deliveries)))
        try:
            self.client.get(f"/webhooks/{events.webhook_id}")
            return  # saved after the fixture subscribed: the same subscription and secret
        except ApiError as exc:
            if exc.status != 404:
                raise
        sub = self.client.create_webhook(events.receiver.url("s1"), "*", "payorch pytest fixture")
        events.receiver.arm("s1", sub["secret"])
        events.webhook_id, events.secret = sub["id"], sub["secret"]

    @property
    def events(self) -> Events:
        if self._events is None:
            self.listen()
        assert self._events is not None
        return self._events

    def listen(self) -> None:
        """Subscribe the local receiver to every event (done at start: an event fired before
        the subscription would never arrive)."""
        receiver = Receiver()
        sub = self.client.create_webhook(receiver.url("s1"), "*", "payorch pytest fixture")
        receiver.arm("s1", sub["secret"])
        self._events = Events(receiver, sub["id"], sub["secret"])

    def run_scenario(self, path: str | Path) -> Any:
        """Run a scenario file (every matrix cell) against this simulator; AssertionError with
        the failure report if one fails. Returns the results."""
        from payorch_cli.scenario.interpreter import Runner
        from payorch_cli.scenario.loader import load_file
        from payorch_cli.scenario.report import instance_failure_lines
        from payorch_cli.scenario.reporters import QuietReporter

        scenario = load_file(Path(path), self.keys.check)
        runner = Runner(self.base_url, self.keys, self.default, QuietReporter())
        results = [runner.run(instance) for instance in scenario.instances()]
        for result in results:
            if not result.passed:
                raise AssertionError("\n".join(instance_failure_lines(result)))
        return results

    def close(self) -> None:
        if self._events is not None:
            # A test that stopped the server needs no cleanup: never fail the teardown for it.
            with contextlib.suppress(Exception):
                self.client.delete_webhook(self._events.webhook_id)
            self._events.receiver.close()
        for client in self._clients:
            client.close()
        if self._stop is not None:
            self._stop()
