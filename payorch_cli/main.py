"""The `payorch` command: one typer app, one module per noun under `commands/`.

Global options (--base-url, --api-key, --json) live on the root callback (options.py); command
modules import only typer and the standard library at the top, so `payorch --help` stays fast and
never loads aiohttp or textual.

Commands are registered here in the order and under the headings `payorch --help` lists them
(typer's `rich_help_panel`, drawn by options.Group), and every help page gets its examples
from payorch_cli/examples.py: both in one place, so command modules carry neither.
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
from payorch_cli.examples import apply_examples
from payorch_cli.options import command_group, root_options

SERVE = "Serve and tools"
RESOURCES = "Resources"
SIMULATION = "Simulation"
OBSERVATION = "Observation"
TEAM = "Namespaces and team"

app = command_group(
    "Local, offline simulator of a LATAM-first payment-orchestration API.",
    name="payorch",
    pretty_exceptions_enable=False,
)
app.callback()(root_options)

app.command("serve", rich_help_panel=SERVE)(serve.serve)
app.command("keys", rich_help_panel=SERVE)(keys.keys)
app.command("tui", rich_help_panel=SERVE)(tui.tui)
app.command("mcp", rich_help_panel=SERVE)(mcp_command.mcp)
app.command("openapi", rich_help_panel=SERVE)(openapi.openapi)
app.command("proxy", rich_help_panel=SERVE)(proxy_command.proxy)
app.command("deploy-config", rich_help_panel=SERVE)(deploy_config_command.deploy_config)
app.command("completion", rich_help_panel=SERVE)(completion_command.completion)
app.command("skill", rich_help_panel=SERVE)(skill_command.skill)

app.add_typer(payments_command.app, name="payments", rich_help_panel=RESOURCES)
app.add_typer(payouts_command.app, name="payouts", rich_help_panel=RESOURCES)
app.command("balance", rich_help_panel=RESOURCES)(balance_command.balance)
app.command("methods", rich_help_panel=RESOURCES)(methods_command.methods)

app.add_typer(simulate.app, name="simulate", rich_help_panel=SIMULATION)
app.command("trigger", rich_help_panel=SIMULATION)(trigger.trigger)
app.add_typer(clock.app, name="clock", rich_help_panel=SIMULATION)
app.add_typer(providers_command.app, name="providers", rich_help_panel=SIMULATION)
app.add_typer(scenario.app, name="scenario", rich_help_panel=SIMULATION)
app.command("reset", rich_help_panel=SIMULATION)(reset_command.reset)
app.add_typer(state_command.app, name="state", rich_help_panel=SIMULATION)

app.command("listen", rich_help_panel=OBSERVATION)(listen_command.listen)
app.add_typer(webhooks_command.app, name="webhooks", rich_help_panel=OBSERVATION)
app.add_typer(logs_command.app, name="logs", rich_help_panel=OBSERVATION)
app.command("trace", rich_help_panel=OBSERVATION)(trace_command.trace)
app.command("coverage", rich_help_panel=OBSERVATION)(coverage_command.coverage)
app.command("record", rich_help_panel=OBSERVATION)(record_command.record)
app.command("drift", rich_help_panel=OBSERVATION)(drift_command.drift)

app.add_typer(ns_command.app, name="ns", rich_help_panel=TEAM)
app.add_typer(team_command.app, name="team", rich_help_panel=TEAM)

apply_examples(app)


if __name__ == "__main__":  # pragma: no cover
    app()
