"""Write `SKILL.md` and `llms.txt` from three sources, so they cannot drift from the product: the
hand-written guide beside this module (`guide.md`), the CLI's own commands (their names and first
help lines, read from the typer app) and the OpenAPI document the server serves (its paths and
summaries).

    python -m payorch_cli.agent.generate      # rewrites both files beside this module

A test regenerates both and compares them with the files in the package.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SKILL_FILE = HERE / "SKILL.md"
LLMS_FILE = HERE / "llms.txt"
OPENAPI_FILE = HERE.parent.parent / "simulator" / "openapi" / "openapi.yaml"
DESCRIPTION = (
    "Run and drive payorch, a local simulator of a LATAM payment-orchestration API (payments, "
    "checkout, refunds, payouts, webhooks, time travel), through its CLI or its MCP server."
)
METHODS = ("get", "post", "put", "patch", "delete")


def commands() -> Iterator[tuple[str, str]]:
    """(`payorch ...` command line, first help line) for every command, groups expanded."""
    from typer import Context
    from typer.main import get_command

    from payorch_cli.main import app

    def walk(command: Any, prefix: str) -> Iterator[tuple[str, str]]:
        if hasattr(command, "list_commands"):  # a group (typer's own click, not PyPI's)
            context = Context(command)
            for name in command.list_commands(context):
                child = command.get_command(context, name)
                if child is not None and not child.hidden:
                    yield from walk(child, f"{prefix} {name}")
        else:
            yield prefix, (command.get_short_help_str(limit=200) or "").rstrip(".")

    yield from walk(get_command(app), "payorch")


def operations() -> Iterator[tuple[str, str, str]]:
    """(METHOD, path, summary) of every operation of the OpenAPI document, in its order."""
    import yaml

    document = yaml.safe_load(OPENAPI_FILE.read_text(encoding="utf-8"))
    for path, item in document["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if isinstance(operation, dict):
                yield method.upper(), path, str(operation.get("summary", "")).rstrip(".")


def _guide() -> str:
    return (HERE / "guide.md").read_text(encoding="utf-8").strip()


def skill_md() -> str:
    lines = [
        "---",
        "name: payorch",
        f"description: {DESCRIPTION}",
        "---",
        "",
        "# payorch",
        "",
        _guide(),
        "",
        "## Every command",
        "",
        *(f"- `{line}`: {help_}" for line, help_ in commands()),
        "",
        "## Every API operation (base `http://127.0.0.1:8080/api/v1`)",
        "",
        *(f"- `{method} {path}`: {summary}" for method, path, summary in operations()),
        "",
    ]
    return "\n".join(lines)


def llms_txt() -> str:
    """The llms.txt convention: a title, a one-paragraph summary, then sections of links."""
    lines = [
        "# payorch",
        "",
        f"> {DESCRIPTION}",
        "",
        _guide(),
        "",
        "## API",
        "",
        "- [OpenAPI document](http://127.0.0.1:8080/api/v1/openapi.json): every operation, "
        "served by `payorch serve`",
        *(f"- {method} {path}: {summary}" for method, path, summary in operations()),
        "",
        "## CLI",
        "",
        *(f"- {line}: {help_}" for line, help_ in commands()),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    SKILL_FILE.write_text(skill_md(), encoding="utf-8")
    LLMS_FILE.write_text(llms_txt(), encoding="utf-8")
    sys.stdout.write(f"wrote {SKILL_FILE} and {LLMS_FILE}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
