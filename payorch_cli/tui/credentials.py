"""The keys the TUI can switch between: those given with `--api-key`, then `payorch keys`.

`payorch keys` reads the fixtures (`simulator.fixture_loader.load_catalog`), which is the
only simulator module the CLI touches; it is imported here lazily, in a worker, the first time
the switcher opens, so starting the TUI never pays for it. A server started with other
fixtures has other keys: pass them with `--api-key` (repeatable) or `--fixtures DIR`.
Publishable keys are left out: the TUI needs secret-key endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Credential:
    secret_key: str
    merchant_name: str | None = None
    merchant_id: str | None = None
    shop_id: str | None = None
    environment: str | None = None

    @property
    def label(self) -> str:
        if self.merchant_name is None:
            return f"{mask(self.secret_key)}  (from --api-key)"
        shop = self.shop_id or "merchant-wide"
        return f"{self.merchant_name} · {shop} · {self.environment} · {mask(self.secret_key)}"


def mask(key: str) -> str:
    return key if len(key) <= 12 else f"{key[:8]}…{key[-4:]}"


def fixture_credentials(fixtures: Path | None = None) -> list[Credential]:
    from simulator.fixture_loader import load_catalog

    catalog = load_catalog(fixtures)
    return [
        Credential(
            secret_key=c.secret,
            merchant_name=c.merchant.name,
            merchant_id=c.merchant.id,
            shop_id=c.shop.id if c.shop else None,
            environment=c.environment,
        )
        for c in catalog.credentials
    ]


def switchable(
    given: list[str], fixtures: Path | None = None, *, include_fixtures: bool = True
) -> list[Credential]:
    """The given keys first (as typed), then the fixture keys not among them."""
    known = fixture_credentials(fixtures) if include_fixtures else []
    by_key = {c.secret_key: c for c in known}
    result = [by_key.get(key, Credential(key)) for key in dict.fromkeys(given)]
    result.extend(c for c in known if c.secret_key not in set(given))
    return result
