"""Public shapes of stored records: what GET, list, create and event payloads show.

Money is rounded per currency here, at the edge; links are made absolute with the caller's base.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain.catalog import PaymentMethod
from simulator.domain.money import dec
from simulator.jsonio import to_json_number
from simulator.memory import BoundedCache

# The category icon shown for a method without a logo of its own.
_CATEGORY_ICONS = {"ONLINE": "online", "CASH": "cash", "CREDIT_CARD": "card"}

if TYPE_CHECKING:
    from simulator.domain.records import ClaimRecord, TransactionRecord


def absolute(base_url: str, path: str | None) -> str | None:
    if path is None:
        return None
    return path if path.startswith(("http://", "https://")) else base_url.rstrip("/") + path


def icon_path(method: PaymentMethod) -> str:
    """The path of a method's icon under /static: its own logo, else its channel's category."""
    if method.icon:
        return f"/static/icons/{method.icon}"
    return f"/static/icons/category-{_CATEGORY_ICONS[method.channel]}.svg"


def _money(value: str | None) -> Decimal | None:
    return None if value is None else dec(value)


class _JsonMoney(BoundedCache[str, int | float]):
    """Stored amounts as the numbers the API shows, read as `_JSON_MONEY[text]`. A transaction's
    view is built on every create and read: as Decimals, its amounts cost six times as much to
    make and encode, and the same few values (fees, round amounts) recur from one payment to the
    next. A hit is a plain dict lookup, in C; only a miss calls back into Python."""

    __slots__ = ()

    def __missing__(self, value: str) -> int | float:
        number = self[value] = to_json_number(dec(value))
        return number


_JSON_MONEY = _JsonMoney(16_384)


def _json_money(value: str) -> int | float:
    return _JSON_MONEY[value]


def settles_at(tx: TransactionRecord) -> float | None:
    """When `settlement.status` turns `settled` by time alone; None if time will not turn it."""
    if tx["status"] in ("failed", "expired"):
        return None
    return tx.get("availableAt")


def settlement_status(tx: TransactionRecord, now: float) -> str:
    if tx["status"] in ("failed", "expired"):
        return "cancelled"
    at = tx.get("availableAt")
    return "settled" if at is not None and at <= now else "pending"


def transaction_view(
    tx: TransactionRecord, base_url: str, now: float, *, on_create: bool = False
) -> dict[str, Any]:
    """The transaction as the API shows it: `created_view` on create, else its read view."""
    if on_create:
        return created_view(tx, base_url, now)
    money = _JSON_MONEY
    view: dict[str, Any] = {
        "id": tx["id"],
        "status": tx["status"],
        "amount": money[tx["amount"]],
        "currency": "USD",
    }
    if tx.get("inputCurrency"):
        view["inputCurrency"] = tx["inputCurrency"]
        input_amount = tx.get("inputAmount")
        view["inputAmount"] = None if input_amount is None else money[input_amount]
    view["amountLocal"] = money[tx["amountLocal"]]
    view["currencyLocal"] = tx["currencyLocal"]
    view["paymentMethodId"] = tx["paymentMethodId"]
    view["paymentMethod"] = tx["paymentMethod"]
    view["country"] = tx["country"]
    view["fees"] = {key: money[value] for key, value in tx["fees"].items()}
    view["settlement"] = {
        "type": "delayed",
        "delay": tx["settlementDelay"],
        "status": settlement_status(tx, now),
    }
    view["paymentFormUrl"] = absolute(base_url, tx.get("paymentFormPath"))
    view["paymentData"] = dict(tx["paymentData"])
    if tx.get("hostedCheckout"):
        view["checkoutUrl"] = absolute(base_url, tx["checkoutPath"])
    timestamps = {"created": isoformat(tx["createdAt"]), "updated": isoformat(tx["updatedAt"])}
    for key in ("completedAt", "failedAt", "expiredAt", "refundedAt"):
        if tx.get(key) is not None:
            timestamps[key.removesuffix("At")] = isoformat(tx[key])
    view["timestamps"] = timestamps
    view["userEmail"] = tx.get("userEmail")
    view["refundedAmount"] = money[tx.get("refundedLocal", "0")]
    # The payment stays `completed` under a chargeback (spec); this says one is open on it.
    view["chargebackClaimId"] = tx.get("chargebackClaimId")
    view["merchantOrderId"] = tx.get("merchantOrderId")
    view["tag1"], view["tag2"], view["tag3"] = tx["tags"]
    return view


def created_view(tx: TransactionRecord, base_url: str, now: float) -> dict[str, Any]:
    """What POST /payments answers about the transaction it made (one pass, in answer order)."""
    money = _JSON_MONEY
    view: dict[str, Any] = {
        "transactionId": tx["id"],
        "status": tx["status"],
        "amount": money[tx["amount"]],
        "currency": "USD",
    }
    if tx.get("inputCurrency"):
        view["inputCurrency"] = tx["inputCurrency"]
        input_amount = tx.get("inputAmount")
        view["inputAmount"] = None if input_amount is None else money[input_amount]
    icon = absolute(base_url, tx["iconPath"])
    view["amountLocal"] = money[tx["amountLocal"]]
    view["currencyLocal"] = tx["currencyLocal"]
    view["paymentMethodId"] = tx["paymentMethodId"]
    view["paymentMethod"] = tx["paymentMethod"]
    view["paymentMethodName"] = tx["paymentMethodName"]
    view["logoUrl"] = icon
    view["iconUrl"] = icon
    view["country"] = tx["country"]
    fees = tx["fees"]  # as `new_record` made it a moment ago: these four
    view["fees"] = {
        "platform": money[fees["platform"]],
        "provider": money[fees["provider"]],
        "network": money[fees["network"]],
        "total": money[fees["total"]],
    }
    view["settlement"] = {
        "type": "delayed",
        "delay": tx["settlementDelay"],
        "reserve": money[tx["reserve"]],
        "status": settlement_status(tx, now),
    }
    view["paymentFormUrl"] = absolute(base_url, tx.get("paymentFormPath"))
    view["paymentData"] = dict(tx["paymentData"])
    if tx.get("hostedCheckout"):
        view["checkoutUrl"] = absolute(base_url, tx["checkoutPath"])
    view["merchantOrderId"] = tx.get("merchantOrderId")
    view["tag1"], view["tag2"], view["tag3"] = tx["tags"]
    view["expiresAt"] = isoformat(tx["expiresAt"])
    return view


def claim_view(claim: ClaimRecord) -> dict[str, Any]:
    return {
        "id": claim["id"],
        "kind": claim["kind"],
        "transactionId": claim["transactionId"],
        "status": claim["status"],
        "resolution": claim.get("resolution"),
        "amount": dec(claim["amount"]),
        "amountUsd": dec(claim["amountUsd"]),
        "currency": claim["currency"],
        "reason": claim.get("reason"),
        "createdAt": isoformat(claim["createdAt"]),
        "resolvedAt": isoformat(resolved) if (resolved := claim.get("resolvedAt")) else None,
    }


def refund_view(claim: ClaimRecord) -> dict[str, Any]:
    return {
        "refundId": claim["id"],
        "transactionId": claim["transactionId"],
        "amount": dec(claim["amount"]),
        "amountUsd": dec(claim["amountUsd"]),
        "currency": claim["currency"],
        "status": claim["status"],
        "reason": claim.get("reason"),
        "createdAt": isoformat(claim["createdAt"]),
    }


__all__ = ["_money", "absolute", "claim_view", "refund_view", "transaction_view"]
