"""A `payorch serve` that fails to start leaves no data dir behind (issue 36 item 10): the one it
made is removed, one that was there before is kept with what it holds. Real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.cluster import needs_nginx

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def serve(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAYORCH, "serve", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("team", [(), ("--team",)], ids=["local", "team"])
def test_a_taken_port_leaves_no_data_dir(tmp_path: Path, taken_port: int, team: tuple[str]) -> None:
    done = serve(tmp_path, "--port", str(taken_port), *team)
    assert done.returncode == 1, done.stderr
    assert "the port is taken" in done.stderr
    assert list(tmp_path.iterdir()) == []  # not even the default ./.payorch


def test_a_data_dir_that_was_there_is_kept(tmp_path: Path, taken_port: int) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "mine.txt").write_text("the user's\n")
    done = serve(tmp_path, "--port", str(taken_port), "--data-dir", str(data))
    assert done.returncode == 1, done.stderr
    assert (data / "mine.txt").read_text() == "the user's\n"


@pytest.mark.parametrize(
    "args",
    [
        ("--namespace-rps", "fast"),
        ("--egress-allow", "10.0.0.0/33"),
        ("--workers", "0"),
        ("--team", "--admin-token-file", "missing"),
        ("--host", "0.0.0.0"),
    ],
)
def test_a_bad_option_leaves_no_data_dir(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = serve(tmp_path, "--port", "0", *args)
    assert done.returncode == 2, done.stderr
    assert list(tmp_path.iterdir()) == []


@needs_nginx
def test_workers_on_a_taken_port_leave_no_data_dir(tmp_path: Path, taken_port: int) -> None:
    data = tmp_path / "data"
    done = serve(
        tmp_path, "--workers", "2", "--team", "--port", str(taken_port), "--data-dir", str(data)
    )
    assert done.returncode == 1, done.stderr
    assert not data.exists()
