"""The examples at the foot of every help page, kept here rather than in each command's
docstring so that one table covers the whole CLI and a test can parse every line of it
(tests/cli/test_examples.py): an example that names a removed option fails there, not in a
new user's terminal.

Keys are command paths as typed after `payorch` ("" is `payorch --help` itself); values are one
to three whole command lines. `ID`-like words (`TXN-...`, `po_...`) stand for what an earlier
command printed; everything else runs as written against `payorch serve`'s defaults. A line
must fit a help page at 80 columns: 78 characters after the section's indent.
"""

from __future__ import annotations

from typing import Any

import typer

SPEI_PAYOUT = (
    "payorch payouts send --method-id sbx_po_mx_spei --amount 500 --name Ana \\\n"
    "  --account 012180001183597198 --document-type RFC --document-id IXLZ9511197B1"
)

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "payorch serve",
        "payorch payments create --amount 10 --method 1001 --simulate paid",
        "payorch trigger payment.completed",
    ),
    # Serve and tools
    "serve": ("payorch serve", "payorch serve --port 0 --data-dir /tmp/payorch --quiet"),
    "deploy-config": ("payorch deploy-config --worker 127.0.0.1:8081 --worker 127.0.0.1:8082",),
    "keys": ("payorch keys", "payorch keys --json", "payorch keys --namespace ci-1"),
    "tui": ("payorch tui", "payorch tui --namespace ci-1"),
    "openapi": ("payorch openapi > openapi.json",),
    "mcp": ("payorch mcp", "payorch mcp --read-only --base-url http://127.0.0.1:8080"),
    "proxy": ("payorch proxy --upstream https://sandbox.example --out recording",),
    "completion": (
        "payorch completion bash > ~/.local/share/bash-completion/completions/payorch",
        'payorch completion zsh > "${fpath[1]}/_payorch"',
        "payorch completion fish > ~/.config/fish/completions/payorch.fish",
    ),
    "skill": ("payorch skill > SKILL.md", "payorch skill --llms-txt"),
    # Resources
    "payments": ("payorch payments create --amount 10 --method 1001",),
    "payments create": (
        "payorch payments create --amount 10 --method 1001",
        "payorch payments create --amount 50 --method 1001 --simulate paid \\\n"
        "  --merchant-order-id order-42 --idempotency-key order-42",
        "payorch payments create --amount 50 --method sbx_pix --country BR \\\n"
        "  --user-name 'Ana Souza' --user-email ana@example.com \\\n"
        "  --document-id 52998224725 --hosted-checkout",
    ),
    "payments get": ("payorch payments get TXN-...", "payorch payments get TXN-... --json"),
    "payments list": (
        "payorch payments list",
        "payorch payments list --status completed --limit 10",
    ),
    "payments refund": (
        "payorch payments refund TXN-...",
        "payorch payments refund TXN-... --amount 100 --reason duplicate",
    ),
    "payouts": (SPEI_PAYOUT,),
    "payouts send": (
        SPEI_PAYOUT,
        "payorch payouts send --method-id sbx_po_br_pix --amount 100 --name Ana \\\n"
        "  --account ana@example.com --account-type EMAIL --document-id 52998224725 \\\n"
        "  --idempotency-key payout-7",
    ),
    "payouts list": ("payorch payouts list", "payorch payouts list --status failed"),
    "payouts get": ("payorch payouts get po_...",),
    "balance": ("payorch balance", "payorch balance --payout"),
    "methods": (
        "payorch methods --country BR",
        "payorch methods --json | jq -r '.[] | select(.routable) | .paymentMethodId'",
    ),
    # Simulation
    "simulate": ("payorch simulate payment TXN-... paid",),
    "simulate payment": (
        "payorch simulate payment TXN-... paid",
        "payorch simulate payment TXN-... chargeback",
    ),
    "simulate payout": (
        "payorch simulate payout po_... completed",
        "payorch simulate payout po_... rejected",
    ),
    "simulate deposit": (
        "payorch simulate deposit --clabe 646180... --amount 250",
        "payorch simulate deposit --clabe 646180... --amount 250 \\\n"
        "  --payer-name 'Ana López' --payer-email ana@example.com",
    ),
    "trigger": (
        "payorch trigger payment.completed",
        "payorch trigger payout.failed --json",
        "payorch trigger settlement.closed --advance-clock",
    ),
    "clock": ("payorch clock advance 1h",),
    "clock show": ("payorch clock show",),
    "clock advance": ("payorch clock advance 90s", "payorch clock advance 2d"),
    "providers": ("payorch providers", "payorch providers set prv_stp_mx --behaviour outage"),
    "providers show": ("payorch providers show prv_stp_mx",),
    "providers set": (
        "payorch providers set prv_stp_mx --behaviour outage",
        "payorch providers set prv_stp_mx --behaviour accept --decline-rate 0.3",
    ),
    "providers incident": ("payorch providers incident prv_stp_mx timeout --for 10m",),
    "providers end": ("payorch providers end prv_stp_mx",),
    "providers reset": ("payorch providers reset",),
    "scenario": ("payorch scenario run scenarios/",),
    "scenario run": (
        "payorch scenario run scenarios/",
        "payorch scenario run scenarios/ -k refund --junit report.xml",
    ),
    "scenario validate": ("payorch scenario validate scenarios/",),
    "scenario schema": ("payorch scenario schema > scenario.schema.json",),
    "reset": ("payorch reset",),
    "state": ("payorch state save before-refunds",),
    "state save": ("payorch state save before-refunds", "payorch state save base --overwrite"),
    "state restore": ("payorch state restore before-refunds",),
    "state list": ("payorch state list",),
    "state delete": ("payorch state delete before-refunds",),
    # Observation
    "listen": (
        "payorch listen",
        "payorch listen --forward-to http://localhost:3000/hooks --print-secret",
        "payorch listen --events payment.completed,payment.failed",
    ),
    "webhooks": ("payorch webhooks audit http://localhost:3000/hooks --secret whsec_...",),
    "webhooks audit": ("payorch webhooks audit http://localhost:3000/hooks --secret whsec_...",),
    "logs": ("payorch logs tail --status 4xx",),
    "logs tail": ("payorch logs tail", "payorch logs tail --status 4xx --path /payments"),
    "logs show": ("payorch logs show req_...",),
    "trace": ("payorch trace TXN-...", "payorch trace po_... --json"),
    "coverage": ("payorch coverage", "payorch coverage --all-errors"),
    "record": ("payorch record --last 5 -o session.yaml",),
    "drift": ("payorch drift recording --min-parity 0.95 --html drift.html",),
    # Namespaces and team
    "ns": ("payorch ns create ci-1",),
    "ns create": ("payorch ns create ci-1", "payorch ns create ci-1 --idle 3600"),
    "ns show": ("payorch ns show ci-1",),
    "ns list": ("payorch ns list",),
    "ns delete": ("payorch ns delete ci-1",),
    "team": ("payorch team whoami --token pat_...",),
    "team owners": ("payorch team owners --token pat_...",),
    "team whoami": ("payorch team whoami",),
    "team audit": ("payorch team audit --namespace ci-1 --limit 50",),
    "team token": ("payorch team token create ana --kind person",),
    "team token create": (
        "payorch team token create ana --kind person",
        "payorch team token create ci --kind ci --expires-in 86400",
    ),
    "team token list": ("payorch team token list",),
    "team token revoke": ("payorch team token revoke tok_...",),
    "team quota": ("payorch team quota set ana --max-namespaces 5",),
    "team quota set": ("payorch team quota set ana --max-namespaces 5",),
}


def epilog(lines: tuple[str, ...]) -> str:
    """The epilog typer carries to click: the command lines, one a line (Command.format_epilog
    prints them under `Examples:` without rewrapping)."""
    return "\n".join(lines)


def apply_examples(app: typer.Typer, path: tuple[str, ...] = ()) -> None:
    """Give every command and group of `app` its examples, as typer's `epilog`, before typer
    builds the click commands: the one place help pages get them."""
    if not path:
        app.info.epilog = epilog(EXAMPLES[""])
    for command in app.registered_commands:
        name = command.name or _command_name(command.callback)
        found = EXAMPLES.get(" ".join([*path, name]))
        if found is not None:
            command.epilog = epilog(found)
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        group_name = str(group.name or sub.info.name)
        found = EXAMPLES.get(" ".join([*path, group_name]))
        if found is not None:
            group.epilog = epilog(found)
        apply_examples(sub, (*path, group_name))


def _command_name(callback: Any) -> str:
    from typer.main import get_command_name

    return get_command_name(callback.__name__)
