"""Shared option aliases, declared once, and how the global ones are resolved.

`--base-url`, `--api-key` and `--json` are accepted both before the command (`payorch --json clock
show`, the root callback of main.py) and after it (`payorch clock show --json`): a flag written on
the command wins over one written on the root, and either wins over the environment
(PAYORCH_BASE_URL, PAYORCH_API_KEY), which `Client` reads. The options carry no `envvar=` on
purpose: typer would then fill the command-level value from the environment and it would beat an
explicit root-level flag.

`api_errors` is the one wrapper that turns errors into exit statuses with a one-line reason
(httpie's ExitStatus idea): every networked command runs its body inside it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from simulator.settings import DEFAULT_DATA_DIR

if TYPE_CHECKING:
    from payorch_cli.client import Client


def command_group(help: str, **settings: Any) -> typer.Typer:
    """A typer app (the root or a command group) with the CLI's settings: help without a
    command, and help and usage errors formatted by click rather than in rich panels (typer's
    rich help renderer is 90 ms of every `--help`; docs/decisions.md)."""
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None, **settings)


DataDir = Annotated[
    Path,
    typer.Option("--data-dir", help="Where the store lives (one server per data dir)."),
]
Fixtures = Annotated[
    Path | None,
    typer.Option(
        "--fixtures",
        help="A directory with merchants.yaml, payment_methods.yaml, providers.yaml and fx.yaml "
        "(default: the built-in fixtures).",
        exists=True,
        file_okay=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="The payorch server (env PAYORCH_BASE_URL; default http://127.0.0.1:8080).",
        show_default=False,
    ),
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="A secret key or access token (env PAYORCH_API_KEY; default: the fixture sandbox "
        "key of shp_mazul_tienda).",
        show_default=False,
    ),
]
DEFAULT_DATA = DEFAULT_DATA_DIR


class ExitStatus(IntEnum):
    OK = 0
    ERROR = 1  # the API answered with an error, or a scenario failed
    USAGE = 2  # bad arguments or an invalid scenario file (nothing was run)
    UNREACHABLE = 3  # no server answered at the base URL: worth retrying, unlike 1


@dataclass(frozen=True, slots=True)
class Globals:
    base_url: str | None = None
    api_key: str | None = None
    json: bool = False

    def client(self) -> Client:
        from payorch_cli.client import Client

        return Client(self.base_url, self.api_key)


def root_options(
    ctx: typer.Context,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Local, offline simulator of a LATAM-first payment-orchestration API."""
    ctx.obj = Globals(base_url, api_key, as_json)


def resolve(
    ctx: typer.Context | None,
    base_url: str | None = None,
    api_key: str | None = None,
    as_json: bool = False,
) -> Globals:
    """The command-level values over the root-level ones (the environment comes after both)."""
    root = ctx.find_root().obj if ctx is not None else None
    root = root if isinstance(root, Globals) else Globals()
    return Globals(base_url or root.base_url, api_key or root.api_key, as_json or root.json)


@contextmanager
def api_errors(command: str) -> Iterator[None]:
    """Run a command body; an ApiError becomes one line on stderr and its exit status."""
    from payorch_cli.client import ApiError
    from payorch_cli.render.errors import error_line

    try:
        yield
    except ApiError as exc:
        sys.stderr.write(f"payorch {command}: {error_line(exc)}\n")
        status = ExitStatus.UNREACHABLE if exc.status == 0 else ExitStatus.ERROR
        raise typer.Exit(status) from None


def emit(globals_: Globals, data: object, human: object) -> None:
    """Print `data` as JSON under --json, else `human` (a string or rich renderable, or a
    zero-argument callable making one, so JSON runs never build tables)."""
    if globals_.json:
        from payorch_cli.render.objects import to_json

        sys.stdout.write(to_json(data) + "\n")
        return
    renderable = human() if callable(human) else human
    if isinstance(renderable, str):
        sys.stdout.write(renderable + "\n")
        return
    from rich.console import Console

    Console().print(renderable)
