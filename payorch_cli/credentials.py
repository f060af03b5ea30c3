"""Credentials: the fixture keys as `payorch keys` lists them (design.md 1.2), and the one
`Credential` that the scenario runner's `as:` names and the TUI's key switcher hand around.

`fixture_rows` is the only place that turns the fixtures' keys into rows: `payorch keys` prints
them, and `credentials_of` names each key of a row for the scenario runner and the TUI. Reading
the fixtures imports `simulator.fixture_loader` (YAML and the catalog's dataclasses, not the
server), inside the function, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Credential:
    """One key to call the API with, and how it is named."""

    name: str  # OWNER/ENVIRONMENT[/publishable] for a fixture key; a raw key shows its start
    key: str | None  # None: send no Authorization header (`as: none`)
    environment: str | None  # sandbox | production | None (unknown: an access token)
    merchant_id: str | None = None  # the fixture merchant owning the key; None for a raw key
    merchant_name: str | None = None
    shop_id: str | None = None  # None: merchant-wide (legacy), or a raw key
    publishable: bool = False

    @classmethod
    def raw(cls, key: str) -> Credential:
        """A key given as is (`--api-key`, `as: sk_test_…`), not looked up in the fixtures."""
        return cls(key[:12] + "…", key, environment_of(key))

    @property
    def label(self) -> str:
        """One line of the TUI's key switcher."""
        key = mask(self.key or "")
        if self.merchant_name is None:
            return f"{key}  (from --api-key)"
        shop = self.shop_id or "merchant-wide"
        return f"{self.merchant_name} · {shop} · {self.environment} · {key}"


def mask(key: str) -> str:
    """A key shortened for display: its prefix and its last four characters."""
    return key if len(key) <= 12 else f"{key[:8]}…{key[-4:]}"


def environment_of(key: str) -> str | None:
    if key.startswith(("sk_test_", "pk_test_")):
        return "sandbox"
    if key.startswith(("sk_live_", "pk_live_")):
        return "production"
    return None


def fixture_rows(fixtures: Path | None = None) -> list[dict[str, Any]]:
    """Every credential of the fixtures (None: the built-in set), as `payorch keys --json` prints
    it: {merchantId, merchantName, shopId, environment, publishableKey, secretKey}. The rows are
    the server's (`key_rows`), so a namespace's keys and the fixtures' are listed alike."""
    from simulator.domain.namespaces import key_rows
    from simulator.fixture_loader import load_catalog

    return key_rows(load_catalog(fixtures))


def namespace_rows(data_dir: Path, fixtures: Path | None, name: str) -> list[dict[str, Any]]:
    """Namespace `name`'s credentials, derived from the data dir's namespace secret as its
    server derives them; exit 2 with a one-line reason when it has no such namespace."""
    import sys

    import typer

    from simulator.domain.namespaces import SECRET_FILE, key_rows, keyed_for, valid_name
    from simulator.fixture_loader import load_catalog

    root = data_dir / "namespaces"
    if not valid_name(name) or not (root / name).is_dir():
        sys.stderr.write(
            f"payorch keys: no namespace {name!r} in {data_dir} (create it with `payorch ns "
            "create`, or pass --base-url to ask a server)\n"
        )
        raise typer.Exit(2)
    secret = bytes.fromhex((root / SECRET_FILE).read_text().strip())
    return key_rows(keyed_for(load_catalog(fixtures), secret, name))


def credentials_of(row: Mapping[str, Any]) -> list[Credential]:
    """A row's keys, the secret one first, named OWNER/ENVIRONMENT[/publishable]: OWNER is the
    shop, or the merchant for a merchant-wide key."""
    owner = row["shopId"] or row["merchantId"]
    environment = row["environment"]
    return [
        Credential(
            f"{owner}/{environment}{suffix}",
            key,
            environment,
            merchant_id=row["merchantId"],
            merchant_name=row.get("merchantName"),
            shop_id=row["shopId"],
            publishable=bool(suffix),
        )
        for suffix, key in (("", row["secretKey"]), ("/publishable", row["publishableKey"]))
        if key is not None
    ]


TrapKey = tuple[str, str | None, str]  # merchantId, shopId (None: merchant-wide), environment


def trap_key(row: Mapping[str, Any]) -> TrapKey:
    return row["merchantId"], row["shopId"], row["environment"]


def traps(fixtures: Path | None = None) -> dict[TrapKey, str]:
    """The fixtures' trap credentials, each with what every request made with it is answered
    (`403 shop_suspended: The shop is suspended.`): keys that authenticate and yet serve no
    request. Keyed by owner and environment, not by key, so that a namespace's derived keys
    (the same merchants and shops) are marked alike."""
    from simulator.domain.auth import standing_refusal
    from simulator.fixture_loader import load_catalog

    found: dict[TrapKey, str] = {}
    for credential in load_catalog(fixtures).credentials:
        refusal = standing_refusal(credential)
        if refusal is not None:
            shop = credential.shop.id if credential.shop else None
            owner = (credential.merchant.id, shop, credential.environment)
            found[owner] = f"{refusal.status} {refusal.code}: {refusal.message}"
    return found
