"""docs/scenarios.md's example of the `payorch` fixture's saved states and errors, run as
printed (the python block after `<!-- fixture-example -->`) in a pytest of its own, through the
installed plugin."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"
PLUGINS_OFF = ("-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider")


def example() -> str:
    found = re.search(r"<!-- fixture-example -->\n```python\n(.*?)\n```", DOC.read_text(), re.S)
    assert found, "no fixture example in docs/scenarios.md"
    return found.group(1) + "\n"


def run_pytest(folder: Path, test_file: str) -> subprocess.CompletedProcess[str]:
    """A pytest of its own on one file of `folder`, through the installed plugin."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *PLUGINS_OFF, test_file],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_documented_fixture_example_passes(tmp_path: Path) -> None:
    (tmp_path / "test_example.py").write_text(example(), encoding="utf-8")
    ran = run_pytest(tmp_path, "test_example.py")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout


def test_a_wait_that_times_out_says_what_it_waited_for(tmp_path: Path) -> None:
    """The message names the event type (and the match when there is one), never `None`."""
    (tmp_path / "test_wait.py").write_text(
        "def test_nothing_arrives(payorch):\n"
        "    payorch.events.wait_for('payment.refunded', timeout=0.2)\n\n\n"
        "def test_no_match(payorch):\n"
        "    payorch.events.wait_for('payment.refunded', {'data': {'id': 'TXN-1'}}, timeout=0.2)\n",
        encoding="utf-8",
    )
    ran = run_pytest(tmp_path, "test_wait.py")
    assert "2 failed" in ran.stdout, ran.stdout + ran.stderr
    assert "no payment.refunded event within 0.2 s" in ran.stdout
    assert "no payment.refunded matching {'data': {'id': 'TXN-1'}} within 0.2 s" in ran.stdout
    assert "matching None" not in ran.stdout
