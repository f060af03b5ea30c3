"""`payorch tui` takes the global options and repeated --api-key keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import payorch_cli.tui.app as tui_app
from payorch_cli.main import app


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def run(
        base_url: str | None,
        keys: list[str],
        fixtures: Path | None = None,
        namespace: str | None = None,
        drift: Path | None = None,
    ) -> None:
        seen.update(base_url=base_url, keys=keys, fixtures=fixtures)
        if drift is not None:
            seen["drift"] = drift
        if namespace is not None:
            seen["namespace"] = namespace

    monkeypatch.setattr(tui_app, "run", run)
    return seen


def test_repeated_keys_on_the_command(started: dict[str, Any]) -> None:
    args = ["tui", "--base-url", "http://h:1", "--api-key", "sk_a", "--api-key", "sk_b"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert started == {"base_url": "http://h:1", "keys": ["sk_a", "sk_b"], "fixtures": None}


def test_global_options_before_the_command(started: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["--base-url", "http://h:2", "--api-key", "sk_root", "tui"])
    assert result.exit_code == 0, result.output
    assert started["base_url"] == "http://h:2" and started["keys"] == ["sk_root"]


def test_no_key_uses_the_clients_fallbacks(started: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["tui"])
    assert result.exit_code == 0, result.output
    assert started["keys"] == [] and started["base_url"] is None


def test_namespace_after_the_command(started: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["tui", "--namespace", "team-1", "--base-url", "http://h:3"])
    assert result.exit_code == 0, result.output
    assert started["namespace"] == "team-1" and started["base_url"] == "http://h:3"
