"""The PEP 723 examples: each declares its inline script metadata as the PEP's reference reader
finds it (so `uv run examples/NAME.py` installs what it needs), and says how to run it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
# The reference implementation's regular expression (PEP 723, "Reference Implementation").
BLOCK = r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$"


def _metadata(script: str) -> dict[str, object]:
    found = [m for m in re.finditer(BLOCK, script) if m.group("type") == "script"]
    assert len(found) == 1, "one `# /// script` block"
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in found[0].group("content").splitlines(keepends=True)
    )
    return tomllib.loads(content)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_each_declares_its_dependencies_and_how_to_run_it(example: Path) -> None:
    script = example.read_text(encoding="utf-8")
    metadata = _metadata(script)
    assert metadata["requires-python"] == ">=3.11"
    assert metadata["dependencies"] == ["payorch"]
    assert f"uv run examples/{example.name}" in script
