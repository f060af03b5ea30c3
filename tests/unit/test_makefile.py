"""The Makefile's test runs tell why a test was skipped: `make check` (what CI runs) and `make
test` call pytest with `-rs`, so a skipped browser test is listed with its reason, not only
counted."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def recipe(target: str) -> list[list[str]]:
    """The commands of a Makefile target, each split into words."""
    lines = MAKEFILE.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"{target}:")
    commands = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        commands.append(shlex.split(line.strip()))
    return commands


def reports_skips(words: list[str]) -> bool:
    """Whether pytest's `-r` summary includes skips: `-rs`, `-rsx`, `-ra`, `-r s`..."""
    for index, word in enumerate(words):
        chars = word[2:] if word.startswith("-r") else None
        if word == "-r" and index + 1 < len(words):
            chars = words[index + 1]
        if chars and ("s" in chars or "a" in chars or "A" in chars):
            return True
    return False


@pytest.mark.parametrize("target", ["check", "test"])
def test_the_pytest_run_lists_skip_reasons(target: str) -> None:
    [pytest_line] = [words for words in recipe(target) if words[0] == "pytest"]
    assert reports_skips(pytest_line), f"make {target}: {shlex.join(pytest_line)} lacks -rs"


def test_the_flag_reader_knows_what_hides_skips() -> None:
    assert reports_skips(["pytest", "-n", "2", "-rs"]) and reports_skips(["pytest", "-ra"])
    assert not reports_skips(["pytest", "-n", "2"]) and not reports_skips(["pytest", "-rf"])
