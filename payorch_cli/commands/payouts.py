"""`payorch payouts send|list|get`: send a payout (POST /me/payout/send) and read the ones sent
(GET /me/payout/send[/ID]); `payorch simulate payout` drives a sandbox one to its outcome.

The recipient's fields differ per rail (the method's `recipientFields` in GET
/me/payout/methods is the authority): the common ones are named options, any other goes as
`-d recipient[KEY]=VALUE`, as in `payments create`."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from payorch_cli.body import build, json_object
from payorch_cli.commands.payments import Data, Fields
from payorch_cli.options import (
    ApiKey,
    BaseUrl,
    Json,
    Limit,
    Offset,
    api_errors,
    command_group,
    emit,
    resolve,
)
from payorch_cli.options import amount as amount_option

app = command_group("Payouts: send one, list and get the ones you sent.")


class Status(StrEnum):
    processing = "processing"
    completed = "completed"
    failed = "failed"


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[Status | None, typer.Option("--status", help="Only this status.")] = None,
    method_id: Annotated[
        str | None, typer.Option("--method-id", help="A payout method id (sbx_po_mx_spei...).")
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """List sent payouts, newest first."""
    from payorch_cli.render.resources import payouts_table

    options = resolve(ctx, base_url, api_key, as_json)
    query = {
        "status": status.value if status else None,
        "methodId": method_id,
        "limit": limit,
        "offset": offset,
    }
    with api_errors("payouts list"):
        page = options.user_client().get("/me/payout/send", **query)
    emit(options, page, lambda: payouts_table(page))


@app.command("get")
def get(
    ctx: typer.Context,
    payout_id: Annotated[str, typer.Argument(metavar="ID", help="po_...")],
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print one payout."""
    from urllib.parse import quote

    from payorch_cli.render.resources import payout_view

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("payouts get"):
        result = options.user_client().get(f"/me/payout/send/{quote(payout_id, safe='')}")
    emit(options, result, lambda: payout_view(result))


# The recipient fields most rails share (the spec's table under POST /me/payout/send); any
# other goes as -d recipient[KEY]=VALUE.
Name = Annotated[str | None, typer.Option("--name", help="recipient.name: the beneficiary.")]
Account = Annotated[
    str | None, typer.Option("--account", help="recipient.account: CLABE, PIX key, CBU, CCI...")
]
DocumentId = Annotated[
    str | None, typer.Option("--document-id", help="recipient.documentId: no dots or dashes.")
]
DocumentType = Annotated[
    str | None, typer.Option("--document-type", help="recipient.documentType: RFC or CURP (SPEI).")
]
AccountType = Annotated[
    str | None, typer.Option("--account-type", help="recipient.accountType: CPF, EVP, SAVINGS...")
]
BankCode = Annotated[
    str | None, typer.Option("--bank-code", help="recipient.bankCode: one of the method's codes.")
]
Email = Annotated[str | None, typer.Option("--email", help="recipient.email: optional.")]
PayoutAmount = Annotated[
    float | None,
    typer.Option(
        "--amount", parser=amount_option, metavar="AMOUNT", help="In the method's currency."
    ),
]
MethodId = Annotated[
    str | None,
    typer.Option("--method-id", help="The payout method (sbx_po_mx_spei, sbx_po_br_pix...)."),
]


@app.command("send")
def send(
    ctx: typer.Context,
    method_id: MethodId = None,
    amount: PayoutAmount = None,
    name: Name = None,
    account: Account = None,
    document_id: DocumentId = None,
    document_type: DocumentType = None,
    account_type: AccountType = None,
    bank_code: BankCode = None,
    email: Email = None,
    fields: Fields = None,
    data: Data = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option("--idempotency-key", help="A retry under the same key never pays twice."),
    ] = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Send a payout (POST /me/payout/send) and print it.

    The recipient's fields per rail are in GET /me/payout/methods; a field without an option
    goes as -d recipient[KEY]=VALUE. A sandbox payout stays processing until `payorch simulate
    payout ID completed` (or failed)."""
    from payorch_cli.render.resources import payout_view

    options = resolve(ctx, base_url, api_key, as_json)
    recipient = {
        "name": name,
        "account": account,
        "documentId": document_id,
        "documentType": document_type,
        "accountType": account_type,
        "bankCode": bank_code,
        "email": email,
    }
    body = build(
        json_object(data) if data else None,
        fields or [],
        {"methodId": method_id, "amount": amount},
    )
    given = {key: value for key, value in recipient.items() if value is not None}
    if given:
        nested = body.get("recipient")
        body["recipient"] = {**(nested if isinstance(nested, dict) else {}), **given}
    headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
    with api_errors("payouts send"):
        result = options.user_client().post("/me/payout/send", body, headers=headers)
    emit(options, result, lambda: payout_view(result))
