"""Every `# type: ignore` names the error it silences and says why on the same line (issue 14
item 3): `# type: ignore[code]  # reason`. mypy's `warn_unused_ignores` drops the ones that stop
silencing anything; this keeps the ones left explained, in the checked packages and in the tests
and benchmarks mypy does not check yet."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("simulator", "payorch", "payorch_cli", "tests", "bench")
IGNORE = re.compile(r"#\s*type:\s*ignore")
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[a-z-]+(,\s*[a-z-]+)*\]  # \S")


def test_every_type_ignore_names_its_code_and_gives_a_reason() -> None:
    bare = [
        f"{path.relative_to(ROOT)}:{number}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if IGNORE.search(line) and not EXPLAINED.search(line) and path != Path(__file__)
    ]
    assert bare == [], "write `# type: ignore[code]  # why` on these lines"
