"""The `payorch` command: one typer app, one module per noun under `commands/`."""

from __future__ import annotations

import typer

from payorch_cli.commands import keys, serve
from payorch_cli.commands import listen as listen_command
from payorch_cli.commands import webhooks as webhooks_command

app = typer.Typer(
    name="payorch",
    help="Local, offline simulator of a LATAM-first payment-orchestration API.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("serve")(serve.serve)
app.command("keys")(keys.keys)
app.command("listen")(listen_command.listen)
app.add_typer(webhooks_command.app, name="webhooks")


if __name__ == "__main__":  # pragma: no cover
    app()
