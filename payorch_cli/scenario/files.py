"""Scenario files on disk: reading one (bounded: a file above the size limit is refused with its
name), and finding them under the paths a command names."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from payorch import bounded
from payorch_cli.scenario.source import Loc, ScenarioError, ScenarioFileError, looks_like_scenario


def read_text(path: Path, name: str) -> str:
    """The file's text; a ScenarioFileError at `name`:1:1 if it cannot be read."""
    try:
        return bounded.read_text(path)
    except bounded.TooLargeError as exc:
        raise ScenarioFileError([ScenarioError(Loc(name, 1, 1), str(exc))]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioFileError([ScenarioError(Loc(name, 1, 1), f"cannot read: {exc}")]) from None


NOT_A_SCENARIO = "no top-level `scenario:` key, so not a scenario file"


def discover(
    paths: Iterable[Path],
) -> tuple[list[Path], list[ScenarioError], list[tuple[Path, str]]]:
    """Scenario files under `paths`: a file named explicitly is taken as is; in a directory,
    every *.yaml / *.yml with a top-level `scenario:` key. The other YAML files of a directory
    are left alone and listed with the reason (hidden files and directories are not looked
    at)."""
    files: list[Path] = []
    errors: list[ScenarioError] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for candidate in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in candidate.relative_to(path).parts)
                if hidden or candidate.suffix not in (".yaml", ".yml") or not candidate.is_file():
                    continue
                try:
                    text = bounded.read_text(candidate)
                except bounded.TooLargeError as exc:
                    skipped.append((candidate, str(exc)))
                    continue
                except UnicodeDecodeError:
                    skipped.append((candidate, "not UTF-8 text"))
                    continue
                except OSError as exc:
                    skipped.append((candidate, f"cannot read: {exc.strerror or exc}"))
                    continue
                if looks_like_scenario(text):
                    files.append(candidate)
                else:
                    skipped.append((candidate, NOT_A_SCENARIO))
        else:
            errors.append(ScenarioError(Loc(str(path), 1, 1), "no such file or directory"))
    return files, errors, skipped
