"""Deposit accounts: one fixed CLABE per end user of a shop, and the transfers received into them.

Decisions (docs/decisions.md, "Payouts and deposit accounts"): accounts belong to a shop (the
credential's; a merchant-wide credential is refused with 400 invalid_request). POST is get-or-create
keyed on `endUserRef`; the lookup, the upstream provisioning and the insert run under one lock per
end user, so concurrent calls never mint two accounts. `bank` is what the deposit method's network
states, never a guess from the CLABE prefix. A transfer in is credited as a normal pay-in (through
`PaymentService.record_deposit`) and kept as a deposit record beside the account.
"""

from __future__ import annotations

import asyncio
import builtins
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager
from decimal import Decimal
from random import Random
from typing import TYPE_CHECKING, Any

from simulator.clock import isoformat
from simulator.domain import instructions
from simulator.domain.auth import Principal
from simulator.domain.catalog import DepositMethod, Shop
from simulator.domain.context import DomainContext
from simulator.domain.deposits.request import parse_account_request, parse_deposit_request
from simulator.domain.errors import ApiError
from simulator.domain.ids import new_id
from simulator.domain.money import ZERO, dec, parse_amount, round_to
from simulator.domain.payins.service import PaymentService
from simulator.domain.ports import Table

if TYPE_CHECKING:
    from simulator.domain.records import DepositAccountRecord, DepositRecord, TransactionRecord

MINT_ATTEMPTS = 20
# Keeps Decimal arithmetic inside its 28 digits; far above any real transfer.
MAX_DEPOSIT = Decimal(10) ** 12

AccountKey = tuple[str, str, str]  # (environment, shopId, endUserRef)


class KeyedLocks:
    """One asyncio.Lock per key, dropped when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class DepositService:
    def __init__(
        self,
        ctx: DomainContext,
        payments: PaymentService,
        accounts: Table[DepositAccountRecord],
        deposits: Table[DepositRecord],
    ) -> None:
        self.ctx = ctx
        self.payments = payments
        self._accounts = accounts
        self._deposits = deposits
        self._locks = KeyedLocks()
        # Awaited between the lookup and the insert: the upstream provisioning call of a real
        # network. None here; tests set a delay to prove concurrent calls still create one account.
        self.before_insert: Callable[[], Awaitable[None]] | None = None
        self._by_shop: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._by_ref: dict[AccountKey, list[str]] = defaultdict(list)
        self._by_clabe: dict[str, str] = {}
        self._deposits_of: dict[str, list[str]] = defaultdict(list)
        for account in sorted(accounts.values(), key=lambda a: a["createdAt"]):
            self._index(account)
        for deposit in sorted(deposits.values(), key=lambda d: d["createdAt"]):
            self._deposits_of[deposit["accountId"]].append(deposit["id"])

    def _index(self, account: DepositAccountRecord) -> None:
        shop_key = (account["environment"], account["shopId"])
        self._by_shop[shop_key].append(account["id"])
        self._by_ref[(*shop_key, account["endUserRef"])].append(account["id"])
        self._by_clabe[account["clabe"]] = account["id"]

    # -- the shop and its methods --------------------------------------------------------------

    @staticmethod
    def shop_of(principal: Principal) -> Shop:
        if principal.shop is None:
            raise ApiError(
                "invalid_request",
                "Deposit accounts belong to a shop: use a shop's key, not a merchant-wide one.",
                details={"reason": "shop_credential_required"},
            )
        return principal.shop

    def methods(self, shop: Shop) -> list[DepositMethod]:
        catalog = self.ctx.catalog.deposit_methods
        return [catalog[mid] for mid in shop.deposit_method_ids if mid in catalog]

    def method_entries(self, shop: Shop) -> list[dict[str, Any]]:
        return [
            {
                "depositMethodId": m.id,
                "method": m.method,
                "name": m.name,
                "country": m.country,
                "currency": m.currency,
            }
            for m in self.methods(shop)
        ]

    # -- get or create -------------------------------------------------------------------------

    async def get_or_create(
        self, principal: Principal, body: dict[str, Any]
    ) -> tuple[DepositAccountRecord, bool]:
        shop = self.shop_of(principal)
        methods = self.methods(shop)
        if not methods:
            raise ApiError(
                "deposit_accounts_unavailable",
                f"Shop {shop.id} has no deposit method enabled.",
                details={"depositMethods": []},
            )
        fields = parse_account_request(body)
        missing = [key for key in ("endUserRef", "name") if key not in fields]
        if missing:
            raise _required(missing)
        chosen = self._chosen_method(shop, fields.get("depositMethodId"))
        key = (principal.environment, shop.id, fields["endUserRef"])
        async with self._locks.hold(key):
            existing = self._lookup(key)
            if len(existing) > 1:
                raise ApiError(
                    "deposit_account_conflict",
                    f"{len(existing)} deposit accounts exist for endUserRef "
                    f"{fields['endUserRef']!r}; none was created.",
                    param="endUserRef",
                    details={"accountIds": [a["id"] for a in existing]},
                )
            if existing:
                return existing[0], False
            # Creation-only requirements: an existing account is returned without them.
            needed = dict.fromkeys(("email", *shop.required_deposit_fields))
            missing = [name for name in needed if name not in fields]
            if missing:
                raise _required(missing)
            if chosen is None:
                if len(methods) > 1:
                    raise ApiError(
                        "deposit_method_required",
                        "Several deposit methods are enabled: choose one with depositMethodId.",
                        param="depositMethodId",
                        details={"depositMethods": self.method_entries(shop)},
                    )
                chosen = methods[0]
            if self.before_insert is not None:
                await self.before_insert()
            account = self._mint(principal, shop, chosen, fields)
        return account, True

    def _chosen_method(self, shop: Shop, method_id: str | None) -> DepositMethod | None:
        if method_id is None:
            return None
        for method in self.methods(shop):
            if method.id == method_id:
                return method
        raise ApiError(
            "deposit_method_unavailable",
            f"Deposit method {method_id!r} is not enabled for shop {shop.id}.",
            param="depositMethodId",
            details={"depositMethods": self.method_entries(shop)},
        )

    def _lookup(self, key: AccountKey) -> list[DepositAccountRecord]:
        table = self._accounts
        return [a for aid in self._by_ref.get(key, ()) if (a := table.get(aid)) is not None]

    def _mint(
        self, principal: Principal, shop: Shop, method: DepositMethod, fields: dict[str, Any]
    ) -> DepositAccountRecord:
        rng, now = self.ctx.rng, self.ctx.now()
        for _ in range(MINT_ATTEMPTS):
            clabe = instructions.generate_clabe(rng, bank_code=method.clabe_bank_code)
            if clabe not in self._by_clabe:
                break
        else:  # pragma: no cover - 10^11 account numbers per bank prefix
            raise ApiError("deposit_account_provisioning_failed")
        account: DepositAccountRecord = {
            "id": _fresh_id(rng, "eda_", self._accounts),
            "merchantId": principal.merchant.id,
            "shopId": shop.id,
            "environment": principal.environment,
            "endUserRef": fields["endUserRef"],
            "clabe": clabe,
            "bank": method.bank_name,
            "currency": method.currency,
            "country": method.country,
            "depositMethodId": method.id,
            "methodName": method.name,
            "name": fields["name"],
            "email": fields.get("email"),
            "phone": fields.get("phone"),
            "documentType": fields.get("documentType"),
            "documentId": fields.get("documentId"),
            "customerCountry": fields.get("country"),
            "metadata": fields.get("metadata", {}),
            "status": "active",
            "createdAt": now,
            "updatedAt": now,
        }
        self._accounts.put(account["id"], account)
        self._index(account)
        self.ctx.coverage.reach("deposit_account.create", account)
        return account

    def disable(self, account_id: str) -> DepositAccountRecord:
        """The operator's support action (not an API call): the CLABE stops taking deposits."""
        account = self._accounts.get(account_id)
        if account is None:
            raise ApiError("deposit_account_not_found", f"No deposit account {account_id}.")
        account.update({"status": "disabled", "updatedAt": self.ctx.now()})
        self._accounts.put(account_id, account)
        self.ctx.coverage.reach("deposit_account.disable", account)
        return account

    # -- reads ---------------------------------------------------------------------------------

    def get(self, principal: Principal, account_id: str) -> DepositAccountRecord:
        shop = self.shop_of(principal)
        account = self._accounts.get(account_id)
        # Another shop's (or environment's) id answers exactly like an unknown one.
        if (
            account is None
            or account["shopId"] != shop.id
            or account["environment"] != principal.environment
        ):
            raise ApiError(
                "deposit_account_not_found", f"No deposit account {account_id}.", param="id"
            )
        return account

    def list(
        self, principal: Principal, end_user_ref: str | None, limit: int, offset: int
    ) -> tuple[list[DepositAccountRecord], int]:
        shop = self.shop_of(principal)
        if end_user_ref is not None:
            ids = self._by_ref.get((principal.environment, shop.id, end_user_ref), [])
        else:
            ids = self._by_shop.get((principal.environment, shop.id), [])
        table = self._accounts
        rows = [a for aid in reversed(ids) if (a := table.get(aid)) is not None]
        return rows[offset : offset + limit], len(rows)

    # From here on, `list` in this class's annotations would name the method above: builtins'.
    def deposits(
        self, principal: Principal, account_id: str, limit: int, offset: int
    ) -> tuple[builtins.list[DepositRecord], int]:
        account = self.get(principal, account_id)
        rows = self._deposit_rows(account["id"])
        rows.reverse()  # newest first, like every list
        return rows[offset : offset + limit], len(rows)

    def _deposit_rows(self, account_id: str) -> builtins.list[DepositRecord]:
        table = self._deposits
        return [d for did in self._deposits_of.get(account_id, ()) if (d := table.get(did))]

    def stats(self, account: DepositAccountRecord) -> dict[str, Any]:
        rows = self._deposit_rows(account["id"])
        local: dict[str, Decimal] = defaultdict(lambda: ZERO)
        for row in rows:
            local[row["currency"]] += dec(row["amount"])
        credited = [row for row in rows if row["status"] == "credited"]
        return {
            "deposits": len(rows),
            "credited": len(credited),
            "totalUsd": sum((dec(row["amountUsd"]) for row in credited), ZERO),
            "localTotals": [{"currency": c, "amount": a} for c, a in sorted(local.items())],
            "lastDepositAt": isoformat(rows[-1]["createdAt"]) if rows else None,
        }

    # -- transfers in --------------------------------------------------------------------------

    def receive(
        self, principal: Principal, body: dict[str, Any]
    ) -> tuple[TransactionRecord, DepositRecord]:
        """A customer's transfer into a CLABE of the caller's shop: (pay-in, deposit record)."""
        shop = self.shop_of(principal)
        request = parse_deposit_request(body)
        clabe, payer_name, payer_email = request.clabe, request.payer_name, request.payer_email
        account_id = self._by_clabe.get(clabe)
        account = self._accounts.get(account_id) if account_id else None
        if (
            account is None
            or account["shopId"] != shop.id
            or account["environment"] != principal.environment
        ):
            raise ApiError(
                "deposit_account_not_found",
                f"No deposit account of shop {shop.id} has CLABE {clabe}.",
                param="clabe",
            )
        if account["status"] != "active":
            raise ApiError(
                "deposit_account_disabled",
                f"Deposit account {account['id']} is {account['status']}: its CLABE takes no "
                "transfers.",
                param="clabe",
                details={"accountId": account["id"], "status": account["status"]},
            )
        if request.amount is None:
            raise ApiError("missing_field", "`amount` is required.", param="amount")
        amount = parse_amount(request.amount)
        if amount > MAX_DEPOSIT:
            raise ApiError(
                "amount_invalid", f"`amount` may be at most {MAX_DEPOSIT:,}.", param="amount"
            )
        decimals = self.ctx.fx.decimals(account["currency"])
        if round_to(amount, decimals) != amount:
            raise ApiError(
                "amount_invalid",
                f"{account['currency']} amounts have {decimals} decimal places at most.",
                param="amount",
            )
        return self._credit(account, amount, payer_name, payer_email)

    def _credit(
        self,
        account: DepositAccountRecord,
        amount: Decimal,
        payer_name: str | None,
        payer_email: str | None,
    ) -> tuple[TransactionRecord, DepositRecord]:
        catalog = self.ctx.catalog
        method = catalog.deposit_methods[account["depositMethodId"]]
        reference = instructions.spei_reference(self.ctx.rng)
        payment_data: dict[str, Any] = {"method": method.method, "clabe": account["clabe"]}
        payment_data["reference"] = reference
        if account["bank"]:
            payment_data["bankName"] = account["bank"]
        payment_data["beneficiaryName"] = account["name"]
        payment_data["methodName"] = method.name
        now = self.ctx.now()
        tx = self.payments.record_deposit(
            catalog.shops[account["shopId"]],
            account["environment"],
            catalog.methods[method.payment_method_id],
            amount,
            currency=account["currency"],
            user_name=account["name"],
            user_email=account["email"],
            payment_data=payment_data,
        )
        deposit: DepositRecord = {
            "id": _fresh_id(self.ctx.rng, "dep_", self._deposits),
            "accountId": account["id"],
            "merchantId": account["merchantId"],
            "shopId": account["shopId"],
            "environment": account["environment"],
            "transactionId": tx["id"],
            "status": "credited",
            "amount": str(amount),
            "currency": account["currency"],
            "amountUsd": tx["amount"],
            "clabe": account["clabe"],
            "reference": reference,
            "payerName": payer_name,
            "payerEmail": payer_email,
            "beneficiaryName": account["name"],
            "beneficiaryEmail": account["email"],
            "createdAt": now,
        }
        self._deposits.put(deposit["id"], deposit)
        self._deposits_of[account["id"]].append(deposit["id"])
        return tx, deposit


def _fresh_id(rng: Random, prefix: str, table: Table[Any]) -> str:
    """A new id from the app's generator; a seeded server restarted on the same data dir could
    draw one again, so an id already stored is never handed out twice."""
    while True:
        ident = prefix + new_id(rng, "", 24).lower()
        if table.get(ident) is None:
            return ident


# ---------------------------------------------------------------------------- views


def account_view(
    account: DepositAccountRecord, stats: dict[str, Any] | None = None
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": account["id"],
        "endUserRef": account["endUserRef"],
        "clabe": account["clabe"],
        "bank": account["bank"],
        "currency": account["currency"],
        "country": account["country"],
        "methodName": account["methodName"],
        "depositMethodId": account["depositMethodId"],
        "beneficiary": {"name": account["name"], "email": account["email"]},
        "customer": {
            "name": account["name"],
            "email": account["email"],
            "phone": account["phone"],
            "documentType": account["documentType"],
            "documentId": account["documentId"],
            "country": account["customerCountry"],
        },
        "metadata": account["metadata"],
        "status": account["status"],
        "environment": account["environment"],
        "createdAt": isoformat(account["createdAt"]),
        "updatedAt": isoformat(account["updatedAt"]),
    }
    if stats is not None:
        view["stats"] = stats
    return view


def deposit_view(deposit: DepositRecord) -> dict[str, Any]:
    return {
        "id": deposit["id"],
        "accountId": deposit["accountId"],
        "transactionId": deposit["transactionId"],
        "status": deposit["status"],
        "amount": dec(deposit["amount"]),
        "currency": deposit["currency"],
        "amountUsd": dec(deposit["amountUsd"]),
        "clabe": deposit["clabe"],
        "reference": deposit["reference"],
        "payerName": deposit["payerName"],
        "payerEmail": deposit["payerEmail"],
        "beneficiaryName": deposit["beneficiaryName"],
        "beneficiaryEmail": deposit["beneficiaryEmail"],
        "createdAt": isoformat(deposit["createdAt"]),
    }


# ---------------------------------------------------------------------------- body checks


def _required(names: list[str]) -> ApiError:
    return ApiError(
        "invalid_request",
        f"Missing required field(s): {', '.join(names)}; nothing was created.",
        param=names[0],
        details={"required": names},
    )
