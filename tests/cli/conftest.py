"""Fixtures of the command-line tests that run a real `payorch serve`."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_serve import Server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A server on a fresh data dir; killed at the end if the test left it running (tests that
    crash and restart servers start their own)."""
    running = Server(tmp_path / "data")
    yield running
    if running.proc.poll() is None:
        running.stop(signal.SIGKILL)
