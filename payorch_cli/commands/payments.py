"""`payorch payments create|get|list|refund`: the pay-in resource from the command line, in the
Stripe CLI's manner (named options for the common fields, `-d`/`--data` for the rest; body.py).

Every subcommand prints a table, or the API's answer unchanged under --json; an API error is one
line and exit status 1 (options.api_errors), bad arguments exit 2 before anything is sent."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from payorch_cli import completion
from payorch_cli.body import build, field, json_object
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

app = command_group("Pay-ins: create, get, list and refund payments.")


class Outcome(StrEnum):
    """The spec's Sandbox-Simulate values."""

    paid = "paid"
    failed = "failed"
    expired = "expired"
    chargeback = "chargeback"
    slow_payment = "slow_payment"


class Status(StrEnum):
    completed = "completed"
    pending = "pending"
    failed = "failed"
    refunded = "refunded"
    expired = "expired"
    chargeback = "chargeback"


def _field(text: str) -> str:
    field(text)  # refuses a malformed one here, before anything is sent
    return text


def _data(text: str) -> str:
    json_object(text)
    return text


Fields = Annotated[
    list[str] | None,
    typer.Option(
        "-d",
        "--field",
        parser=_field,
        metavar="KEY=VALUE",
        help="One body field: key=value (a string), key:=JSON (a number, true, an object), "
        "nested as recipient[name]=Ana. Repeatable; wins over --data.",
    ),
]
Data = Annotated[
    str | None,
    typer.Option("--data", parser=_data, metavar="JSON", help="The body as a JSON object."),
]
TransactionId = Annotated[str, typer.Argument(metavar="ID", help="TXN-...")]


Amount = Annotated[
    float | None,
    typer.Option(
        "--amount",
        parser=amount_option,
        metavar="AMOUNT",
        help="Major units of --currency (USD by default).",
    ),
]
Currency = Annotated[str | None, typer.Option("--currency", help="ISO-4217 presentment currency.")]
MethodId = Annotated[
    str | None,
    typer.Option(
        "--payment-method-id",
        "--method",
        help="A 4-digit code or sbx_* (payment-methods).",
        autocompletion=completion.method_ids,
    ),
]
Country = Annotated[str | None, typer.Option("--country", help="ISO-2 or ISO-3.")]
OrderId = Annotated[str | None, typer.Option("--merchant-order-id", help="Your own reference.")]
UserName = Annotated[str | None, typer.Option("--user-name", help="The buyer's name.")]
UserEmail = Annotated[
    str | None, typer.Option("--user-email", help="The buyer's email (rails that ask).")
]
UserPhone = Annotated[
    str | None, typer.Option("--user-phone", help="The buyer's phone (rails that ask).")
]
DocumentId = Annotated[
    str | None, typer.Option("--document-id", help="The buyer's identity document.")
]
HostedCheckout = Annotated[
    bool | None,
    typer.Option("--hosted-checkout", help="Answer with a checkoutUrl.", show_default=False),
]
ReturnUrl = Annotated[
    str | None,
    typer.Option(
        "--return-url",
        help="Where checkout sends the buyer when done (with --hosted-checkout).",
    ),
]
IdempotencyKey = Annotated[
    str | None,
    typer.Option("--idempotency-key", help="A retry under the same key never charges twice."),
]
Simulate = Annotated[
    Outcome | None,
    typer.Option(
        "--simulate",
        help="Sandbox-Simulate: the outcome the sandbox provider sends a few simulated "
        "seconds later.",
    ),
]


@app.command("create")
def create(
    ctx: typer.Context,
    amount: Amount = None,
    currency: Currency = None,
    payment_method_id: MethodId = None,
    country: Country = None,
    merchant_order_id: OrderId = None,
    user_name: UserName = None,
    user_email: UserEmail = None,
    user_phone: UserPhone = None,
    document_id: DocumentId = None,
    hosted_checkout: HostedCheckout = None,
    return_url: ReturnUrl = None,
    fields: Fields = None,
    data: Data = None,
    idempotency_key: IdempotencyKey = None,
    simulate: Simulate = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Create a payment (POST /payments) and print it."""
    from payorch_cli.render.resources import payment_view

    options = resolve(ctx, base_url, api_key, as_json)
    named = {
        "amount": amount,
        "currency": currency,
        "paymentMethodId": payment_method_id,
        "country": country,
        "merchantOrderId": merchant_order_id,
        "userName": user_name,
        "userEmail": user_email,
        "userPhone": user_phone,
        "documentId": document_id,
        "hostedCheckout": hosted_checkout,
        "returnUrl": return_url,
    }
    body = build(json_object(data) if data else None, fields or [], named)
    with api_errors("payments create"):
        result = options.user_client().post(
            "/payments", body, headers=_headers(idempotency_key, simulate)
        )
    emit(options, result, lambda: payment_view(result))


def _headers(idempotency_key: str | None, simulate: Outcome | None) -> dict[str, str]:
    headers = {}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    if simulate is not None:
        headers["Sandbox-Simulate"] = simulate.value
    return headers


@app.command("get")
def get(
    ctx: typer.Context,
    transaction_id: TransactionId,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print one payment (GET /payments/ID)."""
    from urllib.parse import quote

    from payorch_cli.render.resources import payment_view

    options = resolve(ctx, base_url, api_key, as_json)
    with api_errors("payments get"):
        result = options.user_client().get(f"/payments/{quote(transaction_id, safe='')}")
    emit(options, result, lambda: payment_view(result))


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[Status | None, typer.Option("--status", help="Only this status.")] = None,
    payment_method_id: Annotated[
        str | None,
        typer.Option(
            "--payment-method-id",
            "--method",
            help="Only this payment method.",
            autocompletion=completion.method_ids,
        ),
    ] = None,
    country: Annotated[
        str | None, typer.Option("--country", help="Only this country (ISO-2 or ISO-3).")
    ] = None,
    merchant_order_id: Annotated[
        str | None, typer.Option("--merchant-order-id", help="Only this order id of yours.")
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """List payments, newest first (GET /payments).

    Filters are the API's: status, payment method, country, merchant order id."""
    from payorch_cli.render.resources import payments_table

    options = resolve(ctx, base_url, api_key, as_json)
    query = {
        "status": status.value if status else None,
        "paymentMethodId": payment_method_id,
        "country": country,
        "merchantOrderId": merchant_order_id,
        "limit": limit,
        "offset": offset,
    }
    with api_errors("payments list"):
        page = options.user_client().get("/payments", **query)
    emit(options, page, lambda: payments_table(page))


@app.command("refund")
def refund(
    ctx: typer.Context,
    transaction_id: TransactionId,
    amount: Annotated[
        float | None,
        typer.Option(
            "--amount",
            parser=amount_option,
            metavar="AMOUNT",
            help="In the payment's local currency (default: all that remains).",
        ),
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="requested_by_customer, duplicate, fraudulent, other..."),
    ] = None,
    fields: Fields = None,
    data: Data = None,
    base_url: BaseUrl = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Refund a payment, whole or in part (POST /payments/ID/refund)."""
    from urllib.parse import quote

    from payorch_cli.render.resources import refund_view

    options = resolve(ctx, base_url, api_key, as_json)
    body = build(
        json_object(data) if data else None, fields or [], {"amount": amount, "reason": reason}
    )
    with api_errors("payments refund"):
        result = options.user_client().post(
            f"/payments/{quote(transaction_id, safe='')}/refund", body
        )
    emit(options, result, lambda: refund_view(result))
