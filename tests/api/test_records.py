"""The TypedDicts of simulator.domain.records match what the simulator really stores.

mypy checks the code against the records; this checks the records against the store: the flows
that write each kind of record run once, then every stored document must hold each required key
of its TypedDict and no key the TypedDict does not declare.
"""

from __future__ import annotations

from typing import Any

from simulator.domain import records
from simulator.http.keys import ENGINE, STORE
from tests.api.test_payouts import SPEI
from tests.conftest import KEYS, Api

DAY = 86_400
SK = KEYS.sandbox_sk
CUSTOMER = {"firstName": "Ana", "lastName": "Souza", "email": "a@example.com", "phone": "+55119876"}
DEPOSITOR = {"name": "Ana López", "email": "ana@example.com", "phone": "+52 55 1234 5678"}

# Store table -> the record it holds.
TABLES: dict[str, Any] = {
    "transactions": records.TransactionRecord,
    "claims": records.ClaimRecord,
    "checkout_sessions": records.CheckoutSessionRecord,
    "payouts": records.PayoutRecord,
    "deposit_accounts": records.DepositAccountRecord,
    "deposits": records.DepositRecord,
    "webhooks": records.WebhookSubscriptionRecord,
    "webhook_deliveries": records.DeliveryRecord,
    "events": records.EventRecord,
    "movements": records.MovementRecord,
    "payout_movements": records.PayoutMovementRecord,
    "withdrawals": records.WithdrawalRecord,
    "settlement_days": records.SettlementDayRecord,
    "settlement_entries": records.SettlementEntryRecord,
    "settlements": records.SettlementRecord,
    "refresh_tokens": records.RefreshTokenRecord,
}
# Keys only some documents get: each must be seen once, or the test proves nothing of it.
SOMETIMES = {
    "transactions": {"completedAt", "failedAt", "refundedAt", "availableAt"},
    "checkout_sessions": {"completedAt"},
    "refresh_tokens": {"revokedAt"},
}


def mismatch(doc: dict[str, Any], record: Any) -> tuple[list[str], list[str]]:
    """(required keys `doc` lacks, keys of `doc` that `record` does not declare)."""
    required, optional = set(record.__required_keys__), set(record.__optional_keys__)
    return sorted(required - doc.keys()), sorted(doc.keys() - required - optional)


async def ok(api: Api, method: str, path: str, key: str | None = SK, **kw: Any) -> Any:
    status, body, _ = await api.call(method, path, key, **kw)
    assert status in (200, 201), (path, body)
    return body


async def simulate(api: Api, tx: dict[str, Any], action: str) -> None:
    await ok(api, "POST", f"/payments/{tx['transactionId']}/simulate", json={"action": action})


async def checkout(api: Api) -> None:
    """A selector session and its select (Api.call would drop /api/v1 from /checkout paths)."""
    auth = {"Authorization": f"Bearer {SK}"}
    body = {"amount": 50, "customer": CUSTOMER}
    async with api.client.post("/api/v1/checkout/sessions", json=body, headers=auth) as response:
        assert response.status == 200, await response.text()
        token = (await response.json())["sessionId"]
    select = f"/api/v1/checkout/sessions/{token}/select"
    async with api.client.post(select, json={"paymentMethodId": "1001"}) as response:
        assert response.status == 200, await response.text()


async def test_every_stored_record_has_the_shape_of_its_typed_dict(api: Api) -> None:
    # Pay-ins through every transition: completed, failed, refunded by the merchant and by the
    # provider, charged back.
    paid, failed, refunded, disputed = [await api.pay() for _ in range(4)]
    for tx in (paid, refunded, disputed):
        await simulate(api, tx, "paid")
    await simulate(api, failed, "failed")
    await api.advance(3 * DAY)  # settled: refunds and withdrawals draw on `available`
    await simulate(api, refunded, "refunded")
    await simulate(api, disputed, "chargeback")
    await ok(api, "POST", f"/payments/{paid['transactionId']}/refund", json={"amount": 100})

    # Webhooks: a managed inbox and an endpoint nobody listens on (attempts with an error).
    inbox = await ok(api, "POST", "/webhooks", json={"events": "*"})
    hook = await ok(api, "POST", "/webhooks", json={"url": "http://127.0.0.1:9/", "events": "*"})
    await ok(api, "POST", f"/webhooks/{hook['id']}/rotate-secret")

    body = {"endUserRef": "u1", "depositMethodId": "dm_spei_stp", **DEPOSITOR}
    account = (await ok(api, "POST", "/me/deposit-accounts", json=body))["account"]
    await ok(api, "POST", "/_sim/deposits", json={"clabe": account["clabe"], "amount": 500})
    await ok(api, "POST", "/me/payout/fund-sandbox", json={"currency": "MXN", "amount": 10_000})
    send = {"methodId": "po_mx_spei", "amount": 500, "recipient": SPEI}
    await ok(api, "POST", "/me/payout/send", json=send)
    await ok(api, "POST", "/_sim/withdrawals", json={"amount": 1})
    pair = {"apiKey": KEYS.sandbox_pk, "secretKey": SK}
    tokens = await ok(api, "POST", "/auth/token", None, json=pair)
    await ok(api, "POST", "/auth/refresh", None, json={"refreshToken": tokens["refreshToken"]})

    # Time: claims resolve, settlements close, the withdrawal settles, retries run.
    await api.advance(8 * DAY)
    await api.client.server.app[ENGINE].drain()
    listed = await ok(api, "GET", f"/webhooks/{inbox['id']}/deliveries")
    replay = f"/webhooks/{inbox['id']}/deliveries/{listed['data'][0]['id']}/replay"
    await ok(api, "POST", replay)
    # What the clock clears away: an open session, a settlement day still to close.
    await checkout(api)
    await simulate(api, await api.pay(), "paid")

    store = api.client.server.app[STORE]
    for table, record in TABLES.items():
        docs = store.table(table).values()
        assert docs, f"no {table} stored: the flows above no longer write one"
        for doc in docs:
            assert mismatch(doc, record) == ([], []), (table, doc)
    # Records nested in records.
    for delivery in store.table("webhook_deliveries").values():
        for attempt in delivery["attempts"]:
            assert mismatch(attempt, records.DeliveryAttempt) == ([], []), attempt
    for payout in store.table("payouts").values():
        assert mismatch(payout["recipient"], records.PayoutRecipient) == ([], []), payout
    for table, keys in SOMETIMES.items():
        seen = {key for doc in store.table(table).values() for key in doc}
        assert keys <= seen, (table, keys - seen)
