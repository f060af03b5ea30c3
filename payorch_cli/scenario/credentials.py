"""`as:` names: credentials by shop or merchant and environment, as `payorch keys` lists them.

- `shp_lverde_loja` — that shop's sandbox secret key; `shp_mazul_tienda/production` its live one;
  `shp_mazul_tienda/sandbox/publishable` the publishable key;
- `mer_mercadoazul` — a merchant-wide (legacy) key, when the merchant has one;
- a raw key (`sk_test_…`, `pk_live_…`) or access token, used as is; `none` sends no credential.
Names come from the fixtures (the same source as `payorch keys`), so a server started with other
`--fixtures` is reached with raw keys (e.g. `as: ${env.MY_KEY}`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from payorch_cli.client import DEFAULT_API_KEY

RAW_PREFIXES = ("sk_test_", "sk_live_", "pk_test_", "pk_live_", "rt_", "eyJ")


@dataclass(frozen=True, slots=True)
class Credential:
    name: str
    key: str | None  # None: no Authorization header
    environment: str | None  # sandbox | production | None (unknown: a token)

    @property
    def masked(self) -> str:
        if self.key is None:
            return "(none)"
        return self.key[:12] + "…" if len(self.key) > 14 else self.key


def environment_of(key: str) -> str | None:
    if key.startswith(("sk_test_", "pk_test_")):
        return "sandbox"
    if key.startswith(("sk_live_", "pk_live_")):
        return "production"
    return None


class Credentials:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.by_name: dict[str, Credential] = {}
        self.by_key: dict[str, Credential] = {}
        for row in rows:
            owner = row["shopId"] or row["merchantId"]
            env = row["environment"]
            for suffix, key in (("", row["secretKey"]), ("/publishable", row["publishableKey"])):
                if key is None:
                    continue
                name = f"{owner}/{env}{suffix}"
                credential = Credential(name, key, env)
                self.by_name[name] = credential
                self.by_key.setdefault(key, credential)
                if env == "sandbox":  # the sandbox is the default environment of a name
                    self.by_name.setdefault(f"{owner}{suffix}", credential)

    @classmethod
    def builtin(cls, fixtures: Path | None = None) -> Credentials:
        from simulator.fixture_loader import load_catalog  # what `payorch keys` reads too

        catalog = load_catalog(fixtures)
        return cls(
            [
                {
                    "merchantId": c.merchant.id,
                    "shopId": c.shop.id if c.shop else None,
                    "environment": c.environment,
                    "publishableKey": c.publishable,
                    "secretKey": c.secret,
                }
                for c in catalog.credentials
            ]
        )

    def resolve(self, name: str) -> Credential:
        """The credential for an `as:` value; KeyError with a helpful message if unknown."""
        if name == "none":
            return Credential("none", None, None)
        if name in self.by_name:
            return self.by_name[name]
        if name.startswith(RAW_PREFIXES):
            known = self.by_key.get(name)
            return Credential(known.name if known else name[:12] + "…", name, environment_of(name))
        near = difflib.get_close_matches(name, list(self.by_name), 3, 0.5)
        hint = f"did you mean {', '.join(near)}? " if near else ""
        raise KeyError(
            f"unknown credential `{name}`: {hint}names are SHOP_OR_MERCHANT[/sandbox|/production]"
            "[/publishable] as `payorch keys` lists them, a raw key, or `none`"
        )

    def check(self, name: str) -> str | None:
        try:
            self.resolve(name)
        except KeyError as exc:
            return str(exc.args[0])
        return None

    def default(self, api_key: str | None) -> Credential:
        key = api_key or DEFAULT_API_KEY
        return (
            self.resolve(key)
            if key in self.by_name
            else self.by_key.get(key) or Credential(key[:12] + "…", key, environment_of(key))
        )
