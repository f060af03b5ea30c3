"""`payorch serve --workers N` (simulator/cluster/)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import typer

# How the supervisor runs each worker: this CLI's own `serve`, in this interpreter (the
# supervisor, on the simulator's side, does not name the CLI's modules).
WORKER_COMMAND = (sys.executable, "-m", "payorch_cli.main", "serve")


def worker_count_of(value: str) -> int:
    from simulator.cluster.supervisor import ClusterError, worker_count

    try:
        return worker_count(value)
    except ClusterError as exc:
        _bad(str(exc))


def serve_workers(
    host: str,
    port: int,
    data_dir: Path,
    count: int,
    options: list[str],
    *,
    log_requests: bool,
    listening: Callable[[str], None],
) -> None:
    import asyncio

    from simulator.cluster.supervisor import ClusterError, Supervisor, check_layout, find_nginx

    try:
        nginx = find_nginx()
        check_layout(data_dir, count)
    except ClusterError as exc:
        _bad(str(exc))
    try:

        async def run() -> int:
            supervisor = Supervisor(
                host=host,
                port=port,
                data_dir=data_dir,
                count=count,
                worker_command=WORKER_COMMAND,
                worker_options=options,
                nginx=nginx,
                forward_output=log_requests,
                listening=listening,
            )
            return await supervisor.run()

        status = asyncio.run(run())
    except ClusterError as exc:
        typer.echo(f"payorch serve: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"payorch serve: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    raise typer.Exit(status)


def _bad(message: str) -> NoReturn:
    typer.echo(f"payorch serve: {message}", err=True)
    raise typer.Exit(2)
