"""Payout request bodies (fund-sandbox, transfer, swap, send): their shape, one function per
operation, before any balance, method or rate is consulted, and the rules of a payout amount.
The payout account and the payout service apply what these return."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, NamedTuple

from simulator.domain.errors import PAYOUTS, ApiError, invalid_request
from simulator.domain.money import parse_amount, round_to

MAX_AMOUNT = Decimal(10) ** 12  # major units of any currency


class FundRequest(NamedTuple):
    currency: Any
    amount: Any


class SwapRequest(NamedTuple):
    source: Any
    target: Any
    amount: Any


class SendRequest(NamedTuple):
    method_id: Any
    amount: Any
    recipient: Any  # checked against the method's recipient fields once it is found


def parse_fund_request(body: dict[str, Any]) -> FundRequest:
    only_fields(body, ("currency", "amount"))
    return FundRequest(body.get("currency"), body.get("amount"))


def parse_transfer_request(body: dict[str, Any]) -> Any:
    """The amount to move (transfers move USD only)."""
    only_fields(body, ("amount", "currency"))
    if body.get("currency") not in (None, "USD"):  # null is absent
        raise invalid_request(
            "Transfers move USD (the pay-in balance's currency); swap afterwards.",
            [{"path": "currency", "message": "must be USD"}],
            param="currency",
        )
    return body.get("amount")


def parse_swap_request(body: dict[str, Any]) -> SwapRequest:
    only_fields(body, ("from", "to", "amount"))
    return SwapRequest(body.get("from"), body.get("to"), body.get("amount"))


def parse_send_request(body: dict[str, Any]) -> SendRequest:
    only_fields(body, ("methodId", "amount", "recipient"))
    if body.get("methodId") is None:
        raise ApiError("missing_field", "`methodId` is required.", param="methodId")
    return SendRequest(body["methodId"], body.get("amount"), body.get("recipient"))


def parse_payout_amount(
    raw: Any, currency: str, decimals: int, *, from_query: bool = False
) -> Decimal:
    """A positive amount with no more decimals than `currency` has, else 422 amount_invalid
    (payout endpoints answer 422 where pay-ins answer 400); absent is 400 missing_field.
    Only a query string (a swap quote) may carry the number as text."""
    if raw is None:
        raise ApiError("missing_field", "`amount` is required.", param="amount")
    if from_query and isinstance(raw, str):
        try:
            raw = Decimal(raw.strip())
        except InvalidOperation:
            raise amount_invalid("`amount` must be a number.") from None
    try:
        amount = parse_amount(raw)
    except ApiError as error:
        raise amount_invalid(error.message) from None
    # Far above any real payout, and keeps Decimal arithmetic inside its 28 digits.
    if amount > MAX_AMOUNT:
        raise amount_invalid(f"`amount` may be at most {MAX_AMOUNT:,} {currency}.")
    if round_to(amount, decimals) != amount:
        raise amount_invalid(f"{currency} amounts have {decimals} decimal places at most.")
    return amount


def amount_invalid(message: str, **details: Any) -> ApiError:
    return ApiError(
        "amount_invalid", message, param="amount", details=details or None, surface=PAYOUTS
    )


def only_fields(body: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise invalid_request(
            f"Unknown field(s): {', '.join(unknown)} (allowed: {', '.join(allowed)}).",
            [{"path": key, "message": "unknown field"} for key in unknown],
            param=unknown[0],
        )
