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
from pathlib import Path
from typing import Any

from payorch_cli.client import DEFAULT_API_KEY
from payorch_cli.credentials import Credential, credentials_of, fixture_rows

RAW_PREFIXES = ("sk_test_", "sk_live_", "pk_test_", "pk_live_", "rt_", "eyJ", "ns_")


class Credentials:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.by_name: dict[str, Credential] = {}
        self.by_key: dict[str, Credential] = {}
        for row in rows:
            for credential in credentials_of(row):
                assert credential.key is not None
                self.by_name[credential.name] = credential
                self.by_key.setdefault(credential.key, credential)
                if credential.environment == "sandbox":  # the default environment of a name
                    short = credential.name.replace("/sandbox", "", 1)
                    self.by_name.setdefault(short, credential)

    @classmethod
    def builtin(cls, fixtures: Path | None = None) -> Credentials:
        return cls(fixture_rows(fixtures))  # what `payorch keys` lists

    def in_namespace(self, rows: list[dict[str, Any]]) -> Credentials:
        """A namespace's credentials (`rows` as PUT /_sim/namespaces/{name} lists them), under
        the same names; a raw key of these (the fixtures' own) stands for its counterpart."""
        spaced = Credentials(rows)
        for name, credential in self.by_name.items():
            counterpart = spaced.by_name.get(name)
            if counterpart is not None and credential.key is not None:
                spaced.by_key.setdefault(credential.key, counterpart)
        return spaced

    def resolve(self, name: str) -> Credential:
        """The credential for an `as:` value; KeyError with a helpful message if unknown."""
        if name == "none":
            return Credential("none", None, None)
        if name in self.by_name:
            return self.by_name[name]
        if name.startswith(RAW_PREFIXES):
            return self.by_key.get(name) or Credential.raw(name)
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
            else self.by_key.get(key) or Credential.raw(key)
        )
