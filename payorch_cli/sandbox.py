"""`payorch_cli.sandbox()`: an embedded payorch for a script, the pytest fixture's handle without
pytest.

    from payorch_cli.sandbox import sandbox

    with sandbox() as box:
        tx = box.client.post("/payments", {"amount": 50, "paymentMethodId": "1001"})
        box.advance("3d")
        event = box.events.wait_for("payment.failed")

The simulator runs in this process (a thread of its own), on a free port of 127.0.0.1, in
memory, with the built-in fixtures; it stops when the block ends. `base_url` points elsewhere
(a running `payorch serve`) instead. The handle is the `payorch` fixture's (docs/scenarios.md):
`client`, `as_()`, `advance()`, `save()`, `restore()`, `events`, `run_scenario()`, `keys`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.fixture import Payorch

__all__ = ["Payorch", "sandbox"]


@contextmanager
def sandbox(base_url: str | None = None) -> Iterator[Payorch]:
    handle = Payorch.start(base_url, Credentials.builtin())
    try:
        yield handle
    finally:
        handle.close()
