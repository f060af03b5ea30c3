"""The keys the TUI can switch between: those given with `--api-key`, then `payorch keys`.

The fixture keys are `payorch keys`' own rows (`payorch_cli.credentials.fixture_rows`, which reads
the fixtures with `simulator.fixture_loader`). The key switcher reads them in a worker thread each
time it opens, so starting the TUI never pays for the import and a slow or broken fixture
directory never blocks the screen. A server started with other fixtures has other keys: pass
them with `--api-key` (repeatable) or `--fixtures DIR`. Publishable keys are left out: the TUI
needs secret-key endpoints.
"""

from __future__ import annotations

from pathlib import Path

from payorch_cli.credentials import Credential, credentials_of, fixture_rows


def fixture_credentials(fixtures: Path | None = None) -> list[Credential]:
    return [
        credential
        for row in fixture_rows(fixtures)
        for credential in credentials_of(row)
        if not credential.publishable
    ]


def switchable(
    given: list[str], fixtures: Path | None = None, *, include_fixtures: bool = True
) -> list[Credential]:
    """The given keys first (as typed), then the fixture keys not among them."""
    known = fixture_credentials(fixtures) if include_fixtures else []
    by_key = {c.key: c for c in known}
    result = [by_key.get(key) or Credential.raw(key) for key in dict.fromkeys(given)]
    result.extend(c for c in known if c.key not in set(given))
    return result
