"""The README's command blocks, run as a reader would run them, so its examples cannot drift from
the product.

Every fenced `sh`/`console` block carries a marker on the line before it:
`<!-- readme: run -->` (a `console` block: `$ ` lines are commands, the lines under them what
they print; `...` in a line stands for any text, a line of `...` for any number of lines) or
`<!-- readme: not run, WHY -->` (installs, servers and receivers that run until Ctrl-C,
synopses of a server you do not have here). The runnable blocks run in README order, in one
shell, against one fresh `payorch serve`, the README's `127.0.0.1:8080` pointing at it."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.test_serve import Server

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COMMAND_LANGUAGES = {"sh", "shell", "bash", "console"}
RUN = "<!-- readme: run -->"
NOT_RUN = re.compile(r"<!-- readme: not run, (?P<why>.+) -->")
README_ADDRESSES = ("127.0.0.1:8080", "localhost:8080")


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    language: str
    marker: str
    body: str

    @property
    def runs(self) -> bool:
        return self.marker == RUN


@dataclass(frozen=True)
class Command:
    text: str
    expected: tuple[str, ...]


def blocks(text: str) -> list[Block]:
    found = []
    lines = text.splitlines()
    fence = re.compile(r"^```(\w*)$")
    index = 0
    while index < len(lines):
        opening = fence.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = lines.index("```", index + 1)
        marker = lines[index - 1].strip() if index else ""
        body = "\n".join(lines[index + 1 : end])
        found.append(Block(index + 1, opening.group(1), marker, body))
        index = end + 1
    return found


def command_blocks() -> list[Block]:
    return [
        b for b in blocks(README.read_text(encoding="utf-8")) if b.language in COMMAND_LANGUAGES
    ]


def is_complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command, comments=True)
    except ValueError:  # an open quote: the command goes on on the next line
        return False
    return True


def commands(block: Block) -> list[Command]:
    """The `$ ` lines (with their continuations) and the lines each is expected to print."""
    parsed: list[Command] = []
    pending: list[str] = []
    for line in block.body.splitlines():
        if pending and not is_complete("\n".join(pending)):
            pending.append(line)
        elif line.startswith("$ "):
            pending = [line[2:]]
            parsed.append(Command("", ()))
        else:
            assert parsed, f"README.md:{block.line}: output before the first `$ ` command"
            last = parsed[-1]
            parsed[-1] = Command(last.text, (*last.expected, line))
            continue
        parsed[-1] = Command("\n".join(pending), parsed[-1].expected)
    return parsed


def pattern(expected: tuple[str, ...]) -> re.Pattern[str]:
    pieces = []
    for line in expected:
        if line.strip() == "...":
            pieces.append(r"(?:.*\n)*?")
        else:
            pieces.append(".*".join(re.escape(part) for part in line.rstrip().split("...")) + r"\n")
    return re.compile("".join(pieces))


def printed(raw: str, base_url: str) -> str:
    """What a command printed, as the README would show it: at the README's address, no trailing
    spaces, no trailing blank lines, each line ended."""
    lines = [line.rstrip() for line in raw.replace(base_url, "http://127.0.0.1:8080").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "".join(line + "\n" for line in lines)


def script(runnable: list[Block], port: str, outputs: Path) -> str:
    """One shell session for every block: each command's output and exit status to its own
    files, so one command's failure is reported without stopping the others."""
    steps = []
    for number, command in enumerate(c for block in runnable for c in commands(block)):
        text = command.text
        for address in README_ADDRESSES:
            text = text.replace(address, f"127.0.0.1:{port}")
        out = outputs / str(number)
        steps.append(f"{{\n{text}\n}} > {out}.out 2>&1 < /dev/null\necho $? > {out}.rc")
    return "\n".join(steps) + "\n"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data")
    yield running
    if running.proc.poll() is None:
        running.stop(signal.SIGKILL)


def session_env(server: Server, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYORCH_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PAYORCH_BASE_URL=server.url,
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        NO_COLOR="1",
        COLUMNS="80",
        TERM="dumb",
    )
    return env


def test_every_command_block_is_marked_run_or_not_run() -> None:
    found = command_blocks()
    unmarked = [b.line for b in found if not b.runs and not NOT_RUN.fullmatch(b.marker)]
    assert not unmarked, (
        f"README.md lines {unmarked}: mark each `{RUN}` or `<!-- readme: not run, why -->`"
    )
    runnable = [b for b in found if b.runs]
    not_run = [b for b in found if not b.runs]
    assert all(b.language == "console" for b in runnable), [b.line for b in runnable]
    # Both kinds counted: a block moved from one to the other shows in the diff of these figures.
    assert (len(runnable), len(not_run)) == (12, 16), (len(runnable), len(not_run))
    assert all(commands(b) for b in runnable)


def test_the_comparison_refuses_what_the_readme_does_not_show() -> None:
    """The parser and the matcher the README test relies on: continuations, wildcards, and an
    extra or missing line failing."""
    body = '$ curl -d \'{"a":\n  1}\' \\\n    | tee x\n{"id":"TXN-...",...}\n...\n$ true'
    parsed = commands(Block(1, "console", RUN, body))
    assert [c.text for c in parsed] == ["curl -d '{\"a\":\n  1}' \\\n    | tee x", "true"]
    assert parsed[0].expected == ('{"id":"TXN-...",...}', "...") and parsed[1].expected == ()
    shown = pattern(('{"id":"TXN-...",...}',))
    assert shown.fullmatch('{"id":"TXN-1","status":"pending"}\n')
    assert not shown.fullmatch('{"id":"TXN-1","status":"pending"}\nan extra line\n')
    assert not shown.fullmatch('{"error":{}}\n') and not shown.fullmatch("")
    assert pattern(('{"id":"TXN-...",...}', "...")).fullmatch('{"id":"TXN-1",}\nmore\nlines\n')
    assert pattern(()).fullmatch("") and not pattern(()).fullmatch("printed\n")
    assert printed("http://127.0.0.1:5555/x  \n\n", "http://127.0.0.1:5555") == (
        "http://127.0.0.1:8080/x\n"
    )


@pytest.mark.long(41)
def test_the_runnable_blocks_print_what_the_readme_shows(server: Server, tmp_path: Path) -> None:
    runnable = [b for b in command_blocks() if b.runs]
    work, outputs = tmp_path / "work", tmp_path / "outputs"
    work.mkdir()
    outputs.mkdir()
    (work / "scenarios").symlink_to(ROOT / "scenarios")
    port = server.url.rsplit(":", 1)[1]
    subprocess.run(
        ["bash", "-c", script(runnable, port, outputs)],
        cwd=work,
        env=session_env(server, tmp_path / "home"),
        timeout=300,
        check=False,
    )
    failures = []
    number = 0
    for block in runnable:
        for command in commands(block):
            out = printed((outputs / f"{number}.out").read_text(), server.url)
            status = (outputs / f"{number}.rc").read_text().strip()
            number += 1
            if status != "0" or not pattern(command.expected).fullmatch(out):
                failures.append(
                    f"README.md:{block.line}: $ {command.text}\n(exit {status}) expected:\n"
                    + "\n".join(command.expected)
                    + f"\nprinted:\n{out}"
                )
    assert not failures, "\n\n".join(failures)
