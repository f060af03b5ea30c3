"""`payorch completion bash|zsh|fish` and what Tab offers: the script is printed without shell
detection, bash really completes commands, event names and a server's method ids,
namespaces and saved states through it, and a missing server completes nothing, silently."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_serve import PAYORCH, Server

PAYORCH_BIN = shutil.which("payorch")


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the probe is closed


def _tab(words: str, base_url: str) -> tuple[list[str], str]:
    """What bash's completion function offers for the command line `words` (the cursor at its
    end), with the script `payorch completion bash` printed sourced into a real bash."""
    script = subprocess.run(
        [*PAYORCH, "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    parts = [*words.split(), *([""] if words.endswith(" ") else [])]
    program = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(part) for part in parts)}); "
        f"COMP_CWORD={len(parts) - 1}\n"
        f"_payorch_completion {PAYORCH_BIN}\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PAYORCH_BASE_URL": base_url}
    env.pop("PAYORCH_NAMESPACE", None)
    done = subprocess.run(
        ["bash", "--norc", "-c", program], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line], done.stderr


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o default -F"),
        ("zsh", "#compdef payorch"),
        ("fish", "complete --command"),
    ],
)
def test_the_script_is_printed_for_the_named_shell(shell: str, marker: str) -> None:
    done = subprocess.run([*PAYORCH, "completion", shell], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout and "_PAYORCH_COMPLETE" in done.stdout


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = subprocess.run([*PAYORCH, "completion", "tcsh"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "bash, zsh, fish" in done.stderr


@pytest.mark.skipif(PAYORCH_BIN is None or shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_commands_and_events_without_a_server() -> None:
    nowhere = _closed_port_url()
    offered, stderr = _tab("payorch cl", nowhere)
    assert offered == ["clock"]
    offered, stderr = _tab("payorch trigger payment.c", nowhere)
    assert offered == ["payment.captured", "payment.completed"]
    # Values that live in a server: none there, so nothing offered and nothing printed.
    offered, stderr = _tab("payorch payments create --method 10", nowhere)
    assert offered == [] and stderr == ""
    offered, stderr = _tab("payorch state restore ", nowhere)
    assert offered == [] and stderr == ""


@pytest.mark.skipif(PAYORCH_BIN is None or shutil.which("bash") is None, reason="needs bash")
def test_bash_asks_the_server_for_method_ids_namespaces_and_saved_states(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    try:
        assert server.call("PUT", "/_sim/namespaces/ci-tab", None)[0] == 201
        assert server.call("POST", "/_sim/state", {"name": "ready-1"})[0] in (200, 201)
        offered, _ = _tab("payorch payments create --method 100", server.url)
        assert "1001" in offered and "1002" in offered
        assert all(value.startswith("100") for value in offered)
        offered, _ = _tab("payorch ns delete ci-", server.url)
        assert offered == ["ci-tab"]
        offered, _ = _tab("payorch state restore rea", server.url)
        assert offered == ["ready-1"]
    finally:
        server.stop()
