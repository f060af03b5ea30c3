"""Reads the fixture files (merchants, payment methods, providers, FX) into a `Catalog`.

The built-in set lives in `simulator/fixtures/` as package data; `payorch serve --fixtures DIR`
points at a copy holding the same four files, plus `payout_methods.yaml` (payout and deposit
methods, also required in a copy). Users edit those copies by hand, so every problem is
reported as `FixtureError("<file>: <where>: <problem>")` naming the exact entry and key, and
nothing is silently defaulted that changes behaviour.

One module per file (fx, providers, payment_methods, merchants, payout_methods), each with a
`load` written in the validation mini-language of `fields`; `files` knows the file names and
where the package's files are. `load_catalog` reads them in dependency order.
"""

from __future__ import annotations

from importlib.resources.abc import Traversable
from pathlib import Path

from simulator.domain.catalog import Catalog
from simulator.fixture_loader import fx, merchants, payment_methods, payout_methods, providers
from simulator.fixture_loader.fields import FixtureError
from simulator.fixture_loader.files import (
    FIXTURE_FILES,
    FX_FILE,
    MERCHANTS_FILE,
    METHODS_FILE,
    PAYOUT_METHODS_FILE,
    PROVIDERS_FILE,
    builtin_fixtures_dir,
    read_yaml,
    static_dir,
)

__all__ = [
    "FIXTURE_FILES",
    "PAYOUT_METHODS_FILE",
    "FixtureError",
    "builtin_fixtures_dir",
    "load_catalog",
    "static_dir",
]


def load_catalog(path: Path | None = None) -> Catalog:
    """Load and validate the fixture files from `path` (None = the built-in set)."""
    directory: Traversable = builtin_fixtures_dir() if path is None else Path(path)
    if path is not None and not Path(path).is_dir():
        raise FixtureError(str(path), "directory", "not found or not a directory")

    def label(name: str) -> str:
        # Built-ins by bare name; a user's copy by full path, so the message points at the file.
        return name if path is None else str(Path(path) / name)

    raw = {name: read_yaml(directory, name, label(name)) for name in FIXTURE_FILES}
    # Order matters: each file may only refer to those loaded before it.
    fx_table = fx.load(label(FX_FILE), raw[FX_FILE])
    provider_map = providers.load(label(PROVIDERS_FILE), raw[PROVIDERS_FILE])
    methods = payment_methods.load(label(METHODS_FILE), raw[METHODS_FILE], provider_map, fx_table)
    merchant_map = merchants.load(label(MERCHANTS_FILE), raw[MERCHANTS_FILE], methods)
    payout_raw = read_yaml(directory, PAYOUT_METHODS_FILE, label(PAYOUT_METHODS_FILE))
    payout_map, deposit_map = payout_methods.load(
        label(PAYOUT_METHODS_FILE), payout_raw, fx_table, methods
    )
    merchants.check_deposit_methods(label(MERCHANTS_FILE), merchant_map, deposit_map)
    return Catalog(
        merchants=merchant_map,
        methods=methods,
        providers=provider_map,
        fx=fx_table,
        payout_methods=payout_map,
        deposit_methods=deposit_map,
    )
