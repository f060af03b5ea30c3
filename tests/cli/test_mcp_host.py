"""`payorch mcp` does not read the host for whoever steers the agent (issue 31, item 7):
`run_scenario` reads only the environment variables `--allow-env` names and only scenario files
under its scenario folders (the working directory by default), quotes no other file, and walks a
folder within bounds. One real `payorch mcp` process, driven by the SDK's client."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

from payorch_cli.mcp.access import MAX_ENTRIES
from tests.cli.mcp_session import call, environment, fail, session

SECRET = "hunter2-host-token-31-7"
SCENARIO = """\
scenario: {name}
steps:
  - create_payment: {{amount: 3, paymentMethodId: "1001", merchantOrderId: "{order}"}}
    expect: {{json: {{merchantOrderId: "{expected}"}}}}
"""


def _server(cwd: Path, *args: str) -> StdioServerParameters:
    env = {**environment(), "HOST_TOKEN": SECRET, "ALLOWED_ORDER": "order-from-env"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "payorch_cli.main", "mcp", *args],
        env=env,
        cwd=str(cwd),
    )


def _everything(result: tuple[dict[str, Any], str]) -> str:
    return json.dumps(result[0]) + result[1]


async def test_run_scenario_reads_only_what_the_user_allowed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret_file = outside / "shadow"
    secret_file.write_text(f"root:{SECRET}:20228:0:99999:7:::\n")
    project = tmp_path / "project"
    (project / "scenarios").mkdir(parents=True)
    (project / "scenarios" / "sale.yaml").write_text(
        SCENARIO.format(name="sale", order="fixed", expected="fixed")
    )
    (project / "scenarios" / "notes.yaml").write_text(f"token: {SECRET}\n")
    (project / "scenarios" / "leak.yaml").symlink_to(secret_file)
    (project / "link-out").symlink_to(outside)
    (project / "big.yaml").write_text("scenario: big\n" + "#" * (2 << 20))
    crowded = project / "crowded"
    crowded.mkdir()
    for n in range(MAX_ENTRIES + 1):
        (crowded / f"f{n}.txt").touch()

    async with session(_server(project, "--allow-env", "ALLOWED_ORDER")) as client:
        # ${env.NAME}: a variable not allowed reads as unset, and its value goes nowhere.
        leaked = SCENARIO.format(name="leak", order="${env.HOST_TOKEN}", expected="x")
        ran = await call(client, "run_scenario", scenario_yaml=leaked)
        assert ran[0]["failed"] == 1
        assert "HOST_TOKEN may not be read here" in ran[1] and "--allow-env" in ran[1]
        assert SECRET not in _everything(ran)
        fallback = SCENARIO.format(name="fb", order="${env.HOST_TOKEN:-none}", expected="none")
        ran = await call(client, "run_scenario", scenario_yaml=fallback)
        assert ran[0]["passed"] == 1, ran[1]
        log = await call(client, "recent_requests", limit=100)
        assert SECRET not in _everything(log)
        allowed = SCENARIO.format(
            name="ok", order="${env.ALLOWED_ORDER}", expected="order-from-env"
        )
        ran = await call(client, "run_scenario", scenario_yaml=allowed)
        assert ran[0]["passed"] == 1, ran[1]

        # Paths: outside the working directory (symlinks resolved) is refused unread.
        for path in (str(secret_file), "../outside/shadow", "link-out/shadow", "/", "/usr"):
            started = time.perf_counter()
            error, text = await fail(client, "run_scenario", path=path)
            assert error["code"] == "path_not_allowed", (path, text)
            assert SECRET not in text and time.perf_counter() - started < 2
        # Inside: a file that is not a scenario is refused without a word of it.
        error, text = await fail(client, "run_scenario", path="scenarios/notes.yaml")
        assert error["code"] == "not_a_scenario" and SECRET not in json.dumps(error)
        error, _ = await fail(client, "run_scenario", path="big.yaml")
        assert error["code"] == "not_a_scenario" and "over 2 MiB" in error["message"]
        error, _ = await fail(client, "run_scenario", path="scenarios/leak.yaml")
        assert error["code"] == "path_not_allowed"
        # A folder: its scenarios run, the rest is named as skipped, never quoted.
        ran = await call(client, "run_scenario", path="scenarios")
        assert ran[0]["passed"] == 1 and "sale" in ran[1]
        assert sorted(ran[0]["skipped"]) == [
            "scenarios/leak.yaml: outside the scenario folders, not read",
            "scenarios/notes.yaml: not a scenario file (no top-level `scenario:` key); "
            "its content is not shown",
        ]
        assert SECRET not in _everything(ran)
        # A folder walk is bounded.
        started = time.perf_counter()
        error, _ = await fail(client, "run_scenario", path=".")
        assert error["code"] == "too_many_files"
        assert time.perf_counter() - started < 2


async def test_scenario_dir_adds_a_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "suite"
    elsewhere.mkdir()
    (elsewhere / "sale.yaml").write_text(SCENARIO.format(name="s", order="o", expected="o"))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    async with session(_server(cwd, "--scenario-dir", str(elsewhere))) as client:
        ran = await call(client, "run_scenario", path=str(elsewhere / "sale.yaml"))
        assert ran[0]["passed"] == 1, ran[1]
        # --scenario-dir replaces the default: the working directory is not readable now.
        (cwd / "here.yaml").write_text(SCENARIO.format(name="h", order="o", expected="o"))
        error, _ = await fail(client, "run_scenario", path=os.path.join(str(cwd), "here.yaml"))
        assert error["code"] == "path_not_allowed"
