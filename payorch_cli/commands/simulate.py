"""`payorch simulate payment|payout ID ACTION` and `payorch simulate deposit --clabe --amount`:
drive sandbox outcomes from scripts (the spec's simulate endpoints and POST /_sim/deposits)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from payorch_cli.options import ApiKey, BaseUrl, Json, api_errors, command_group, emit, resolve
from payorch_cli.options import amount as amount_option

app = command_group("Drive sandbox outcomes: payments, payouts, deposits.")


class PaymentAction(StrEnum):
    paid = "paid"
    failed = "failed"
    expired = "expired"
    refunded = "refunded"
    chargeback = "chargeback"


class PayoutAction(StrEnum):
    completed = "completed"
    paid = "paid"
    failed = "failed"
    rejected = "rejected"
    refunded = "refunded"
    returned = "returned"
    processing = "processing"


@app.command("payment")
def payment(
    ctx: typer.Context,
    transaction_id: Annotated[str, typer.Argument(metavar="ID", help="TXN-...")],
    action: Annotated[
        PaymentAction, typer.Argument(metavar="ACTION", help="The outcome to simulate.")
    ],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Simulate a pay-in outcome.

    Prints the new status and the events fired.
    """
    from payorch_cli.render.objects import object_table

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("simulate payment"):
        result = options.client().post(
            f"/payments/{transaction_id}/simulate", {"action": action.value}
        )
    emit(options, result, lambda: object_table(f"payment {result['id']}", result))


@app.command("payout")
def payout(
    ctx: typer.Context,
    payout_id: Annotated[str, typer.Argument(metavar="ID", help="po_...")],
    action: Annotated[
        PayoutAction, typer.Argument(metavar="ACTION", help="The outcome to simulate.")
    ],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Simulate a payout outcome.

    Actions: completed (paid), failed (rejected), refunded (returned).
    """
    from payorch_cli.render.resources import payout_view

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("simulate payout"):
        result = options.client().post(
            f"/me/payout/send/{payout_id}/simulate", {"action": action.value}
        )
    emit(options, result, lambda: payout_view(result))


# What a deposit adds to its payment's view; the rest is the payment's or --json's.
DEPOSIT_FIELDS = ("status", "accountId", "clabe", "reference", "payerName", "payerEmail")


@app.command("deposit")
def deposit(
    ctx: typer.Context,
    clabe: Annotated[str, typer.Option("--clabe", help="The deposit account's CLABE.")],
    amount: Annotated[
        float,
        typer.Option(
            "--amount", parser=amount_option, metavar="AMOUNT", help="In the account's currency."
        ),
    ],
    payer_name: Annotated[
        str | None, typer.Option("--payer-name", help="Who sent the transfer, as the bank says.")
    ] = None,
    payer_email: Annotated[
        str | None, typer.Option("--payer-email", help="The sender's email, if the bank has it.")
    ] = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Simulate a transfer into a deposit account (a pay-in)."""
    from rich.console import Group

    from payorch_cli.render.objects import object_table
    from payorch_cli.render.resources import payment_view

    options = resolve(ctx, base_url, api_key, as_json)
    body: dict[str, object] = {"clabe": clabe, "amount": amount}
    if payer_name is not None:
        body["payerName"] = payer_name
    if payer_email is not None:
        body["payerEmail"] = payer_email
    with api_errors("simulate deposit"):
        result = options.client().post("/_sim/deposits", body)

    def human() -> Group:
        parts = [payment_view(result["transaction"])]
        if isinstance(result.get("deposit"), dict):
            deposit = result["deposit"]
            parts.append(object_table(f"deposit {deposit.get('id')}", deposit, DEPOSIT_FIELDS))
        return Group(*parts)

    emit(options, result, human)
