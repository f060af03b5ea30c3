"""`payorch deploy-config`: the nginx configuration in front of payorch workers that run
elsewhere (other hosts, Kubernetes pods; docs/deploy.md), from the code `payorch serve --workers`
runs nginx with (simulator/cluster/nginx_config.py), so the deployed configuration is the tested
one."""

from __future__ import annotations

import re
from typing import Annotated, NoReturn

import typer

from simulator.settings import DEFAULT_PORT

_ADDRESS = re.compile(r"(?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}")
_LISTEN = re.compile(r"(?:(?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):)?\d{1,5}")

Workers = Annotated[
    list[str] | None,
    typer.Option("--worker", metavar="HOST:PORT", help="A worker's address (repeated)."),
]
Listen = Annotated[
    str, typer.Option("--listen", metavar="[ADDRESS:]PORT", help="The proxy's port.")
]


def deploy_config(workers: Workers = None, listen: Listen = str(DEFAULT_PORT)) -> None:
    """Print nginx's configuration for the given workers.

    In front of the --worker addresses, listening on --listen (docs/deploy.md)."""
    print_config(workers or [], listen)


def print_config(workers: list[str], listen: str) -> None:
    from simulator.cluster.nginx_config import render

    if not workers:
        _bad("the workers' addresses are needed: --worker HOST:PORT (repeated)")
    for address in workers:
        if not _ADDRESS.fullmatch(address):
            _bad(f"--worker takes HOST:PORT; got {address!r}")
    if not _LISTEN.fullmatch(listen):
        _bad(f"--listen takes PORT or ADDRESS:PORT; got {listen!r}")
    typer.echo(render(workers, listen), nl=False)


def _bad(message: str) -> NoReturn:
    typer.echo(f"payorch deploy-config: {message}", err=True)
    raise typer.Exit(2)
