"""No module of the server or the CLI over 600 lines (issue 27): a module that grows past it is
doing more than one job and is split by job, as the store's batch scope was."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 600


def test_no_module_is_over_the_limit() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for package in ("simulator", "payorch_cli")
        for path in (ROOT / package).rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert long == {}, f"split these by job: {long}"
