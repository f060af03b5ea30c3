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

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from payorch_cli import completion
from simulator.settings import DEFAULT_DATA_DIR

if TYPE_CHECKING:
    from payorch_cli.client import Client


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices`, or nothing when none is close."""
    import difflib

    by_lower = {choice.lower(): choice for choice in choices}
    near = difflib.get_close_matches(word.lower(), list(by_lower), 1, 0.6)
    return f" (did you mean {by_lower[near[0]]!r}?)" if near else ""


def _choices(param: object) -> list[str] | None:
    # typer keeps a parameter's Enum or Literal choices on its type descriptor.
    found = getattr(getattr(param, "type_descriptor", None), "choices", None)
    if not found:
        return None
    return [str(c.value) if isinstance(c, Enum) else str(c) for c in found]


# pydantic's error types (typer converts values with pydantic), in plain words.
_PLAIN = {
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "float_parsing": "is not a number",
    "bool_parsing": "is not true or false",
    "finite_number": "is not a finite number",
}
# pydantic's bound errors (`min=`, `max=` on an option): the bound from the error's context.
_BOUNDS = {
    "greater_than_equal": ("ge", "is too small: the smallest allowed is {}"),
    "greater_than": ("gt", "is too small: it must be more than {}"),
    "less_than_equal": ("le", "is too large: the largest allowed is {}"),
    "less_than": ("lt", "is too large: it must be less than {}"),
}


def _metavar(param: Any) -> str:
    """What help shows after an option (typer shows the Python type: `<str>`, `<list[Path]>`):
    the choices, else the last word of the option's long name (`--user-email EMAIL`,
    `--payment-method-id ID`, `--base-url URL`), else the parameter's name."""
    choices = _choices(param)
    if choices:
        return "[" + "|".join(choices) + "]"
    longs = [opt for opt in getattr(param, "opts", []) if opt.startswith("--")]
    word = max(longs, key=len).lstrip("-").split("-")[-1] if longs else str(param.name)
    return word.upper()


def plain_reason(exc: typer.BadParameter) -> str | None:
    """What was wrong with a value, in plain words and with the valid choices, for a
    conversion error that typer reports in pydantic's words ("Input should be a valid
    integer, unable to parse string as an integer", "Value error, 'x' is not one of ...").
    None when the message is already ours (a `parser=` raising BadParameter)."""
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return None
    found = errors()
    if not found:
        return None
    first = found[0]
    value = first.get("input")
    choices = _choices(exc.param)
    if choices is not None and isinstance(value, str):
        return f"{value!r} is not one of {', '.join(choices)}{did_you_mean(value, choices)}"
    kind = str(first.get("type"))
    reason = _PLAIN.get(kind)
    if reason is not None:
        return f"{value!r} {reason}"
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        bound = (first.get("ctx") or {}).get(key)
        return f"{value!r} {words.format(bound)}"
    message = str(first.get("msg", "")).removeprefix("Value error, ")
    # Any other pydantic error: its words, about the value rather than about "Input".
    return f"{value!r}{message.removeprefix('Input')}" if message.startswith("Input ") else message


class _Argument(TyperArgument):
    """An argument whose help row is its name (`DURATION`), not its name and Python type
    (`DURATION <float>`): the help text says what it takes; choices stay, as `[a|b]`."""

    def display_type_rich(self, ctx: Any) -> str | None:
        choices = _choices(self)
        return "[" + "|".join(choices) + "]" if choices else None


def _plain_metavars(params: list[Any]) -> list[Any]:
    """Help in words, not Python types: each option's metavar named (`_metavar`), each argument
    shown by its name alone (`_Argument`)."""
    for param in params:
        if isinstance(param, TyperArgument) and not isinstance(param, _Argument):
            param.__class__ = _Argument
        elif param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = _metavar(param)
    return params


def _format_examples(epilog: str | None, formatter: Any) -> None:
    """The epilog (payorch_cli/examples.py) as an `Examples:` section of whole command lines:
    click's own epilog would rewrap them into one paragraph."""
    if not epilog:
        return
    with formatter.section("Examples"):
        for line in epilog.splitlines():
            formatter.write(f"{'':>{formatter.current_indent}}{line}\n")


class Group(TyperGroup):
    """Every command group of the CLI (command_group makes them with it): metavars in words,
    commands listed under their `rich_help_panel` (main.py), examples whole."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_metavars(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        _check_base_url(ctx, self)
        return rest

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        commands = [
            (name, command)
            for name in self.list_commands(ctx)
            if (command := self.get_command(ctx, name)) is not None and not command.hidden
        ]
        if not any(getattr(command, "rich_help_panel", None) for _, command in commands):
            super().format_commands(ctx, formatter)
            return
        # typer's panels need its rich renderer, which this CLI does not use (command_group):
        # the same panels, in click's plain sections, names aligned across all of them.
        width = max(len(name) for name, _ in commands)
        limit = formatter.width - 6 - width
        panels: dict[str, list[tuple[str, str]]] = {}
        for name, command in commands:
            panel = getattr(command, "rich_help_panel", None) or "Commands"
            row = (name.ljust(width), command.get_short_help_str(limit))
            panels.setdefault(panel, []).append(row)
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        _format_examples(self.epilog, formatter)


class Command(TyperCommand):
    """Every command of the CLI (command_group makes them with it): the usage line names
    arguments the conventional way (`ID ACTION`, `[NAME]`, `PATHS...`; typer writes `{ID}
    {action}`), and a bad value is told in plain words with the valid choices."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces.extend(param.get_usage_pieces(ctx))
                continue
            name = (param.metavar or param.name or "").upper()
            if not param.required:
                name = f"[{name}]"
            pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_metavars(super().get_params(ctx))

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        _format_examples(self.epilog, formatter)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        names = {p.name for p in self.params}
        if "base_url" in names and "namespace" not in names:
            args = _take_namespace(ctx, args)
        try:
            rest = super().parse_args(ctx, args)
        except typer.BadParameter as exc:
            exc.message = plain_reason(exc) or exc.message
            raise
        _check_base_url(ctx, self)
        return rest


def _check_base_url(ctx: Any, command: Any) -> None:
    """A malformed --base-url (root's or a command's, `payorch mcp`'s included) is a bad
    argument, exit 2 before anything runs: found later it was a dead server (3) in the
    commands that first probe the server (`scenario run`, `mcp`)."""
    from urllib.parse import urlsplit

    url = ctx.params.get("base_url")
    if not url or ctx.resilient_parsing:  # Tab completion parses half-typed lines
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        param = next((p for p in command.params if p.name == "base_url"), None)
        raise typer.BadParameter(
            f"Not an http(s) URL: {url} (write e.g. http://127.0.0.1:8080)", ctx=ctx, param=param
        )


def _take_namespace(ctx: Any, args: list[str]) -> list[str]:
    """`--namespace NAME` written after a command that talks to a server: taken out of `args`
    and kept where the root's `--namespace` goes (`Globals`), so that every such command takes
    it without a parameter of its own."""
    rest: list[str] = []
    value: str | None = None
    words = iter(args)
    for word in words:
        if word == "--":
            rest.append(word)
            rest.extend(words)
            break
        if word == "--namespace":
            value = next(words, None)
            if value is None:
                raise typer.BadParameter("--namespace needs a NAME")
        elif word.startswith("--namespace="):
            value = word.split("=", 1)[1]
        else:
            rest.append(word)
    if value:
        root = ctx.find_root()
        current = root.obj if isinstance(root.obj, Globals) else Globals()
        root.obj = replace(current, namespace=value)
    return rest


def positive_seconds(value: str) -> float:
    """A `--timeout`: a positive, finite number of seconds (float() alone takes nan, inf, 0)."""
    try:
        seconds = float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number of seconds") from None
    if not 0 < seconds < float("inf"):
        raise typer.BadParameter(f"{value!r} is not a positive number of seconds")
    return seconds


def amount(value: str) -> float:
    """A `--amount` in major units, as written: the server refuses zero, negatives and more
    decimals than the currency has (`amount_invalid`); only what JSON cannot carry (nan, inf)
    or what is no number at all is refused here. A whole amount goes as a JSON integer
    (`--amount 10` sends `10`, not `10.0`), as the user wrote it."""
    try:
        number = float(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an amount (write e.g. 500 or 12.50)") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise typer.BadParameter(f"{value!r} is not an amount (write e.g. 500 or 12.50)")
    if number.is_integer() and abs(number) < 2**53 and value.strip().lstrip("+-").isdigit():
        return int(number)
    return number


class _Typer(typer.Typer):
    def command(  # the same parameters, with our default class
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[Any], Any]:
        return super().command(name, cls=cls or Command, **kwargs)


HELP_OPTIONS = ["-h", "--help"]


def command_group(help: str, **settings: Any) -> typer.Typer:
    """A typer app (the root or a command group) with the CLI's settings: help without a
    command, help and usage errors formatted by click rather than in rich panels (typer's
    rich help renderer is 90 ms of every `--help`; docs/decisions.md), and its commands made
    with `Command`."""
    settings.setdefault("no_args_is_help", True)
    settings.setdefault("context_settings", {}).setdefault("help_option_names", HELP_OPTIONS)
    settings.setdefault("cls", Group)
    return _Typer(help=help, rich_markup_mode=None, **settings)


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
NAMESPACE_HELP = (
    "The namespace to work in (env PAYORCH_NAMESPACE; default: `default`): requests go under "
    "/ns/NAME and a fixture key is swapped for the namespace's own."
)
NamespaceName = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        help=NAMESPACE_HELP,
        show_default=False,
        autocompletion=completion.namespaces,
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
    namespace: str | None = None

    def client(self, tool: str | None = "cli", *, tag_writes: bool = False) -> Client:
        """The command's client; `tool` names it in the request log (payorch_cli/client.py)."""
        from payorch_cli.client import Client

        return Client(
            self.base_url,
            self.api_key,
            tool=tool,
            tag_writes=tag_writes,
            namespace=self.namespace,
        )

    def user_client(self) -> Client:
        """The client of a resource command (`payments`, `payouts`, `balance`): the user's own API
        calls, made from the CLI instead of curl, so nothing is tagged, reads included: they show
        in the request log and in what `record` writes (docs/decisions.md)."""
        return self.client(tool=None)


# A list command's page (payments list, payouts list): the API caps a page at 100 rows.
Limit = Annotated[int, typer.Option("--limit", min=1, help="Page size (the API caps it at 100).")]
Offset = Annotated[int, typer.Option("--offset", min=0, help="Rows to skip.")]

IncludeTools = Annotated[
    bool,
    typer.Option(
        "--include-tools",
        help="Also the requests payorch's own tools made (the TUI's polling, listen, "
        "logs tail, the scenario runner's probe, the CLI's looks at the simulator), left out "
        "by default.",
    ),
]


def include_tools_query(include: bool) -> str | None:
    """The API's `includeTools` value: left out (the default, false) unless asked."""
    return "true" if include else None


def _print_version(wanted: bool) -> None:
    if wanted:
        from importlib import metadata

        sys.stdout.write(f"payorch {metadata.version('payorch')}\n")
        raise typer.Exit(ExitStatus.OK)


def root_options(
    ctx: typer.Context,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
    namespace: NamespaceName = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Local, offline simulator of a LATAM-first payment-orchestration API."""
    ctx.obj = Globals(base_url, api_key, as_json, namespace)


def resolve(
    ctx: typer.Context | None,
    base_url: str | None = None,
    api_key: str | None = None,
    as_json: bool = False,
) -> Globals:
    """The command-level values over the root-level ones (the environment comes after both)."""
    from payorch_cli.client import NAMESPACE_ENV  # standard library only, like this module

    root = ctx.find_root().obj if ctx is not None else None
    root = root if isinstance(root, Globals) else Globals()
    return Globals(
        base_url or root.base_url,
        api_key or root.api_key,
        as_json or root.json,
        root.namespace or os.environ.get(NAMESPACE_ENV) or None,
    )


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
        if exc.status == 0 and exc.code == "invalid_url":
            status = ExitStatus.USAGE  # a malformed --base-url is a bad argument, not a dead server
        raise typer.Exit(status) from None


def emit(globals_: Globals, data: object, human: object) -> None:
    """Print `data` as JSON under --json, else `human` (a string or rich renderable, or a
    zero-argument callable making one, so JSON runs never build tables)."""
    if globals_.json:
        from payorch_cli.render.objects import to_json

        sys.stdout.write(to_json(data) + "\n")
        return
    renderable = human() if callable(human) else human
    from payorch_cli.render.layout import show, wrapped_text

    if isinstance(renderable, str):
        sys.stdout.write(wrapped_text(renderable) + "\n")
        return
    show(renderable)
