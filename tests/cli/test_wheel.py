"""`uvx payorch`: the built wheel carries everything `payorch serve` needs (fixtures, pages,
icons, the OpenAPI document, catalogues, the scenario schema), and works from any directory.

Built with uv and installed into an empty environment outside the repository, as a user of
`uv tool install payorch` or `pipx install payorch` gets it; then served from an empty working
directory and paid through, and run once the way `uvx` runs a tool.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"

pytestmark = pytest.mark.skipif(not Path(UV).exists(), reason="uv is not installed")


def _uv(*args: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [UV, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _post(url: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {SK}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status, json.loads(answer.read())


@pytest.mark.long(11)
def test_the_wheel_serves_and_pays_from_an_empty_directory(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["UV_TOOL_DIR"] = str(tmp_path / "tools")
    env["UV_TOOL_BIN_DIR"] = str(tmp_path / "bin")
    dist = tmp_path / "dist"
    _uv("build", "--wheel", "--out-dir", str(dist), str(ROOT), env=env, cwd=tmp_path)
    (wheel,) = dist.glob("payorch-*.whl")

    # `uvx --from WHEEL payorch`: the tool run in a throwaway environment of uv's.
    version = _uv(
        "tool", "run", "--from", str(wheel), "payorch", "--version", env=env, cwd=tmp_path
    )
    assert version.startswith("payorch ")

    venv = tmp_path / "env"
    _uv("venv", "-q", "--python", sys.executable, str(venv), env=env, cwd=tmp_path)
    _uv("pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel), env=env,
        cwd=tmp_path)  # fmt: skip
    skill = subprocess.run(
        [str(venv / "bin" / "payorch"), "skill"], capture_output=True, text=True, env=env
    )
    assert skill.returncode == 0 and skill.stdout.startswith("---\nname: payorch\n"), skill.stderr
    for example in sorted((ROOT / "examples").glob("*.py")):
        # The PEP 723 scripts, run with the environment the wheel made (`uv run` would resolve
        # `payorch` from an index, where this checkout's version is not).
        ran = subprocess.run(
            [str(venv / "bin" / "python"), str(example)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
        assert ran.returncode == 0, f"{example.name}: {ran.stdout}{ran.stderr}"
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    server = subprocess.Popen(
        [str(venv / "bin" / "payorch"), "serve", "--port", "0"],
        cwd=elsewhere,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("Listening on http://127.0.0.1:"), line + server.stderr.read()
        base = line.split()[-1]
        status, paid = _post(
            f"{base}/api/v1/payments",
            {"amount": 50, "paymentMethodId": "1006", "documentId": "12345678909"},
        )
        assert status == 200 and paid["status"] == "pending" and paid["paymentData"]["qrCode"]
        for path in (
            "/api/v1/openapi.json",
            "/static/icons/pix.svg",
            f"/c/{paid['transactionId']}",
        ):
            request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {SK}"})
            with urllib.request.urlopen(request, timeout=30) as answer:
                assert answer.status == 200, path
        assert (elsewhere / ".payorch").is_dir()  # the data dir is the working directory's
    finally:
        server.terminate()
        server.wait(timeout=30)
