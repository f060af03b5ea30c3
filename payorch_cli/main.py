"""The `payorch` command: one typer app, one module per noun under `commands/`.

Global options (--base-url, --api-key, --json) live on the root callback (options.py); command
modules import only typer and the standard library at the top, so `payorch --help` stays fast and
never loads aiohttp or textual.
"""

from __future__ import annotations

from payorch_cli.commands import balance as balance_command
from payorch_cli.commands import clock, keys, openapi, scenario, serve, simulate, trigger, tui
from payorch_cli.commands import completion as completion_command
from payorch_cli.commands import coverage as coverage_command
from payorch_cli.commands import deploy_config as deploy_config_command
from payorch_cli.commands import drift as drift_command
from payorch_cli.commands import listen as listen_command
from payorch_cli.commands import logs as logs_command
from payorch_cli.commands import mcp as mcp_command
from payorch_cli.commands import methods as methods_command
from payorch_cli.commands import ns as ns_command
from payorch_cli.commands import payments as payments_command
from payorch_cli.commands import payouts as payouts_command
from payorch_cli.commands import providers as providers_command
from payorch_cli.commands import proxy as proxy_command
from payorch_cli.commands import record as record_command
from payorch_cli.commands import reset as reset_command
from payorch_cli.commands import skill as skill_command
from payorch_cli.commands import state as state_command
from payorch_cli.commands import team as team_command
from payorch_cli.commands import trace as trace_command
from payorch_cli.commands import webhooks as webhooks_command
from payorch_cli.options import command_group, root_options

app = command_group(
    "Local, offline simulator of a LATAM-first payment-orchestration API.",
    name="payorch",
    pretty_exceptions_enable=False,
)
app.callback()(root_options)
app.command("serve")(serve.serve)
app.command("deploy-config")(deploy_config_command.deploy_config)
app.command("keys")(keys.keys)
app.command("listen")(listen_command.listen)
app.command("tui")(tui.tui)
app.add_typer(webhooks_command.app, name="webhooks")
app.add_typer(simulate.app, name="simulate")
app.command("trigger")(trigger.trigger)
app.add_typer(clock.app, name="clock")
app.add_typer(logs_command.app, name="logs")
app.command("reset")(reset_command.reset)
app.add_typer(state_command.app, name="state")
app.add_typer(scenario.app, name="scenario")
app.command("openapi")(openapi.openapi)
app.command("coverage")(coverage_command.coverage)
app.command("record")(record_command.record)
app.command("proxy")(proxy_command.proxy)
app.command("trace")(trace_command.trace)
app.add_typer(providers_command.app, name="providers")
app.add_typer(ns_command.app, name="ns")
app.add_typer(team_command.app, name="team")
app.command("mcp")(mcp_command.mcp)
app.add_typer(payments_command.app, name="payments")
app.add_typer(payouts_command.app, name="payouts")
app.command("balance")(balance_command.balance)
app.command("methods")(methods_command.methods)
app.command("completion")(completion_command.completion)
app.command("skill")(skill_command.skill)
app.command("drift")(drift_command.drift)


if __name__ == "__main__":  # pragma: no cover
    app()
