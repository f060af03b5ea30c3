"""`payorch serve --team` and `payorch team ...` against a real server (design.md 1.10): the host
check, the admin token made once (0600) or read from a file, owner tokens, quotas, the audit trail,
and bad input refused in one line with nothing half-applied."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_ns import run
from tests.cli.test_serve import PAYORCH


class TeamServer:
    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--team", "--port", "0", "--data-dir", str(data_dir), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("Listening on http://"), line
        self.url = line.split()[-1]

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=15)
        return err


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"


def test_a_shared_host_needs_team_or_insecure_shared(data_dir: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.20", "ci-sim.internal"):
        done = run("serve", "--host", host, "--port", "0", "--data-dir", str(data_dir))
        assert done.returncode == 2, done
        assert len(done.stderr.strip().splitlines()) == 1
        assert "--team" in done.stderr and "--insecure-shared" in done.stderr
    assert not data_dir.exists()  # refused before anything was made


def test_bad_admin_token_file_is_one_line(tmp_path: Path, data_dir: Path) -> None:
    bad = tmp_path / "admin"
    bad.write_text("hunter2\n")
    for given in (bad, tmp_path / "missing"):
        done = run("serve", "--team", "--admin-token-file", str(given), "--data-dir", str(data_dir))
        assert done.returncode == 2, done
        assert len(done.stderr.strip().splitlines()) == 1 and "admin token" in done.stderr
    assert not (data_dir / "team").exists()


def test_team_cli_end_to_end(data_dir: Path) -> None:
    server = TeamServer(data_dir)
    token_file = data_dir / "team" / "admin-token"
    admin = token_file.read_text().strip()
    assert admin.startswith("pat_")
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    base = ["--base-url", server.url]
    created = run(
        "team",
        "token",
        "create",
        "alice",
        "--max-namespaces",
        "1",
        "--kind",
        "ci",
        "--json",
        "--token",
        admin,
        *base,
    )
    assert created.returncode == 0, created.stderr
    owner = json.loads(created.stdout)["token"]
    env = {"PAYORCH_API_KEY": owner}
    made = run("ns", "create", "alice-1", "--json", *base, env=env)
    assert made.returncode == 0, made.stderr
    again = run("ns", "create", "alice-2", *base, env=env)
    assert again.returncode != 0 and "owner_quota_exceeded" in again.stderr
    negative = run(
        "team", "quota", "set", "alice", "--max-namespaces", "-1", "--token", admin, *base
    )
    assert negative.returncode == 2
    unknown = run(
        "team", "quota", "set", "nobody", "--max-namespaces", "3", "--token", admin, *base
    )
    assert unknown.returncode != 0 and "owner_not_found" in unknown.stderr
    fixture = run("team", "audit", *base)  # the CLI's default key: a fixture key
    assert fixture.returncode != 0 and "admin_required" in fixture.stderr
    audit = run("team", "audit", "--json", "--token", admin, *base)
    entries = json.loads(audit.stdout)["data"]
    actions = [(e["action"], e["namespace"], e["status"]) for e in entries]
    assert ("namespace.create", "alice-1", 201) in actions
    assert ("namespace.create", "alice-2", 403) in actions
    mine = run("team", "audit", "--json", "--token", owner, *base)
    assert {e["owner"] for e in json.loads(mine.stdout)["data"]} == {"alice"}
    whoami = run("team", "whoami", "--json", "--token", owner, *base)
    assert json.loads(whoami.stdout)["namespaces"] == 1
    err = server.stop()
    assert admin in err  # printed on the first start...
    second = TeamServer(data_dir)
    assert admin not in second.stop()  # ...and only then


def test_serve_bounds_options(data_dir: Path) -> None:
    for option in ("--max-namespaces", "--namespace-creations-per-minute"):
        done = run("serve", option, "-1", "--data-dir", str(data_dir))
        assert done.returncode == 2 and option in done.stderr
    proc = subprocess.Popen(
        [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir), "--max-namespaces", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        assert run("ns", "create", "one", "--base-url", url).returncode == 0
        two = run("ns", "create", "two", "--base-url", url)
        assert two.returncode != 0 and "namespace_limit_reached" in two.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def test_namespace_rps_option_is_checked(data_dir: Path) -> None:
    for bad in ("-1", "fast", "nan"):
        done = run("serve", "--namespace-rps", bad, "--data-dir", str(data_dir))
        assert done.returncode == 2 and "--namespace-rps" in done.stderr, done
        assert len(done.stderr.strip().splitlines()) == 1
