"""What `run_scenario` may reach on the host that runs `payorch mcp` (issue 31, item 7).

A tool call carries whatever steered the agent (a web page, an issue, a file it read), and
`run_scenario` is usually approved without a look, so it must not be a way to read the host:

- environment variables: only those `--allow-env` names (none by default); any other reads as
  unset, so `${env.NAME}` neither reaches a request (and the request log) nor a failure text;
- files: only under the scenario folders (`--scenario-dir`, default the working directory),
  resolved with their symlinks before anything is opened; a path outside is refused without
  being looked at (not even whether it exists);
- only scenario files are parsed: a file without a top-level `scenario:` key is refused (in a
  folder, skipped) without a word of its content, so no line of another file is ever quoted;
- a folder walk visits at most `MAX_ENTRIES` entries (hidden ones and symlinked folders are not
  entered), so a path cannot keep the tool busy for seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from payorch import bounded
from payorch_cli.mcp.sandbox import ToolFailure
from payorch_cli.scenario.expressions import EnvScope

# Far above a project's scenario folder, far below a system directory: /usr has ~10^5 entries.
MAX_ENTRIES = 5_000
SCENARIO_SUFFIXES = (".yaml", ".yml")
NOT_A_SCENARIO = "not a scenario file (no top-level `scenario:` key); its content is not shown"
# Which of these it is is not said: each would tell something of a file that may be no scenario.
UNREADABLE = (
    f"not readable as a scenario (unreadable, not UTF-8, or over {bounded.MAX_BYTES >> 20} MiB)"
)


@dataclass(frozen=True, slots=True)
class ScenarioFile:
    path: Path
    shown: str  # as the agent named it, or relative to the folder it named
    text: str


@dataclass(frozen=True, slots=True)
class Found:
    files: list[ScenarioFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "shown: why"


@dataclass(frozen=True, slots=True)
class ScenarioAccess:
    env: frozenset[str] = frozenset()
    folders: tuple[Path, ...] = ()

    @classmethod
    def of(cls, env: Iterable[str] = (), folders: Iterable[str | Path] = ()) -> ScenarioAccess:
        """The access `payorch mcp`'s options give; no folder: the working directory."""
        resolved = tuple(Path(folder).resolve() for folder in folders)
        return cls(frozenset(env), resolved or (Path.cwd().resolve(),))

    def env_scope(self) -> EnvScope:
        return EnvScope(
            self.env,
            refusal=f" (payorch mcp reads only the variables --allow-env names: "
            f"{', '.join(sorted(self.env)) or 'none'})",
        )

    def _inside(self, path: Path) -> bool:
        return any(path.is_relative_to(folder) for folder in self.folders)

    def resolve(self, path: str) -> Path:
        """The path with its symlinks resolved, if it is inside a scenario folder."""
        if "\x00" in path:
            raise ToolFailure("invalid_request", "A path cannot hold a NUL character.")
        resolved = (Path.cwd() / Path(path).expanduser()).resolve()
        if not self._inside(resolved):
            raise ToolFailure(
                "path_not_allowed",
                f"{path} is outside the scenario folders of this MCP server "
                f"({', '.join(map(str, self.folders))}); nothing there was read.",
                hint="Pass the scenario as scenario_yaml, or name a file under a scenario folder "
                "(the user starts payorch mcp with --scenario-dir DIR to add one).",
                details={"param": "path"},
            )
        return resolved

    def scenario_files(self, path: str) -> Found:
        """The scenario files at `path` (a file, or a folder walked within bounds)."""
        resolved = self.resolve(path)
        if resolved.is_dir():
            return self._walk(resolved, path)
        if not resolved.is_file():  # missing, or a device, a FIFO, a socket: never opened
            raise ToolFailure(
                "invalid_request",
                f"No scenario file or folder at {path}.",
                details={"param": "path"},
            )
        text = _read(resolved)
        if text is None or not _looks_like_scenario(text):
            raise ToolFailure(
                "not_a_scenario",
                f"{path} is {NOT_A_SCENARIO if text is not None else UNREADABLE}.",
                hint="Name a scenario file (YAML with a top-level `scenario:` key); the "
                "payorch://scenarios/language resource describes them.",
                details={"param": "path"},
            )
        return Found([ScenarioFile(resolved, path, text)])

    def _walk(self, folder: Path, named: str) -> Found:
        found = Found()
        seen = 0
        pending = [folder]
        while pending:
            current = pending.pop()
            try:
                with os.scandir(current) as entries:
                    for entry in entries:
                        seen += 1
                        if seen > MAX_ENTRIES:
                            raise _too_many(named)
                        if entry.name.startswith("."):
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(Path(entry.path))
                        elif entry.name.endswith(SCENARIO_SUFFIXES):
                            self._take(Path(entry.path), folder, named, found)
            except OSError as exc:
                found.skipped.append(
                    f"{_shown(current, folder, named)}: cannot read ({exc.strerror})"
                )
        found.files.sort(key=lambda f: f.shown)
        return found

    def _take(self, path: Path, folder: Path, named: str, found: Found) -> None:
        shown = _shown(path, folder, named)
        real = path.resolve()
        if not self._inside(real):  # a symlink out of the scenario folders
            found.skipped.append(f"{shown}: outside the scenario folders, not read")
            return
        text = _read(real) if real.is_file() else None
        if text is None or not _looks_like_scenario(text):
            found.skipped.append(f"{shown}: {NOT_A_SCENARIO if text is not None else UNREADABLE}")
            return
        found.files.append(ScenarioFile(real, shown, text))


def _shown(path: Path, folder: Path, named: str) -> str:
    return str(Path(named) / path.relative_to(folder)) if path != folder else named


def _read(path: Path) -> str | None:
    """The file's text (within payorch's size bound), or None."""
    try:
        return bounded.read_text(path)
    except (OSError, ValueError):  # unreadable, too large, not UTF-8
        return None


def _looks_like_scenario(text: str) -> bool:
    from payorch_cli.scenario.source import looks_like_scenario

    return looks_like_scenario(text)


def _too_many(named: str) -> ToolFailure:
    return ToolFailure(
        "too_many_files",
        f"{named} holds more than {MAX_ENTRIES} entries; it was not searched further.",
        hint="Name the folder that holds the scenarios, or one scenario file.",
        details={"param": "path"},
    )
