"""The internal cascade trace: GET /_sim/payments/{id}/trace and GET /_sim/payouts/{id}/trace."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.http.keys import STORE
from simulator.settings import Settings
from tests.api.test_lifecycle import align_to_poll
from tests.api.test_payouts import WALLET, fund
from tests.api.test_payouts_send import production_usd, send
from tests.api.test_providers_flows import CL_CARD, SPEI_DUE, script
from tests.api.webhook_receiver import Receiver, drain, start_receiver, subscribe
from tests.conftest import Api, Keys, assert_error

# The transitions' time-stamped kinds, without the event and delivery entries around them.
CORE = {"created", "routing_attempt", "provider_chosen", "callback_received", "callback_ignored"}
CORE |= {"poll", "simulate", "status_changed", "refund", "chargeback", "claim_resolved"}
CORE |= {"dispatched", "provider_answer"}


async def trace(api: Api, tx_id: str, key: str, kind: str = "payments") -> dict[str, Any]:
    status, body, _ = await api.get(f"/_sim/{kind}/{tx_id}/trace", key)
    assert status == 200, body
    assert body["id"] == tx_id
    return body


def core(body: dict[str, Any]) -> list[tuple[str, ...]]:
    """The entries as (kind, the telling fields), events and deliveries left out."""
    picked = []
    for entry in body["entries"]:
        if entry["kind"] not in CORE:
            continue
        fields = [entry.get(name) for name in ("provider", "outcome", "from", "to", "cause")]
        picked.append((entry["kind"], *(str(f) for f in fields if f is not None)))
    return picked


def kinds(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [entry for entry in body["entries"] if entry["kind"] == kind]


async def simulate(api: Api, tx_id: str, action: str, key: str) -> None:
    status, body, _ = await api.post(f"/payments/{tx_id}/simulate", key, json={"action": action})
    assert status == 200, body


async def pay_simulated(api: Api, outcome: str, key: str) -> dict[str, Any]:
    status, tx, _ = await api.post(
        "/payments",
        key,
        json={"amount": 50, "paymentMethodId": "1001"},
        headers={"Sandbox-Simulate": outcome},
    )
    assert status == 200, tx
    return tx


# -- payments --------------------------------------------------------------------------------------


async def test_a_sandbox_payment_simulated_paid(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    tx_id = tx["transactionId"]
    await simulate(api, tx_id, "paid", keys.sandbox_sk)
    body = await trace(api, tx_id, keys.sandbox_sk)
    assert body["subject"] == "payment" and body["environment"] == "sandbox"
    assert body["truncated"] == 0
    assert core(body) == [
        ("created",),
        ("provider_chosen", "prv_stp_mx"),
        ("simulate",),
        ("status_changed", "pending", "completed", "simulate"),
    ]
    created = body["entries"][0]
    assert created["paymentMethodId"] == "1001" and created["currencyLocal"] == "MXN"
    assert [e["type"] for e in kinds(body, "event_emitted")] == [
        "payment.completed",
        "payment.captured",
    ]
    # Simulated time, in order.
    stamps = [entry["at"] for entry in body["entries"]]
    assert stamps == sorted(stamps) and stamps[0].endswith("Z")


async def test_a_production_failover_shows_every_attempt(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk, paymentMethodId="1004")
    body = await trace(api, tx["transactionId"], keys.live_sk)
    assert body["environment"] == "production"
    assert core(body) == [
        ("created",),
        ("routing_attempt", "prv_orbita_cards", "unavailable"),
        ("routing_attempt", "prv_cardhub", "accepted"),
        ("provider_chosen", "prv_cardhub"),
    ]


async def test_a_production_callback_completes_the_payment(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk)
    await api.advance(31)  # prv_stp_mx calls back after 30 s
    body = await trace(api, tx["transactionId"], keys.live_sk)
    assert core(body)[-2:] == [
        ("callback_received", "prv_stp_mx", "paid"),
        ("status_changed", "pending", "completed", "provider_callback"),
    ]
    [callback] = kinds(body, "callback_received")
    created = body["entries"][0]["at"]
    assert callback["at"] > created
    assert [e["type"] for e in kinds(body, "event_emitted")] == ["payment.completed"]


async def test_the_reconciliation_poll_and_its_answer(api: Api, keys: Keys) -> None:
    await align_to_poll(api, keys, after=10)
    tx = await pay_simulated(api, "slow_payment", keys.sandbox_sk)
    await api.advance(300)
    body = await trace(api, tx["transactionId"], keys.sandbox_sk)
    [poll] = kinds(body, "poll")
    assert poll["answer"] == "paid" and poll["result"] == "applied"
    assert core(body)[-1] == ("status_changed", "pending", "completed", "reconciliation_poll")


async def test_a_late_callback_is_ignored_and_recorded(api: Api, keys: Keys) -> None:
    tx = await pay_simulated(api, "paid", keys.sandbox_sk)
    tx_id = tx["transactionId"]
    await simulate(api, tx_id, "failed", keys.sandbox_sk)
    await api.advance(10)  # the scheduled Sandbox-Simulate outcome arrives after the failure
    body = await trace(api, tx_id, keys.sandbox_sk)
    [ignored] = kinds(body, "callback_ignored")
    assert ignored["outcome"] == "paid" and "failed" in ignored["reason"]
    assert core(body)[-1][0] == "callback_ignored"
    _status, got, _ = await api.get(f"/payments/{tx_id}", keys.sandbox_sk)
    assert got["status"] == "failed"


async def test_the_deadline_expires_a_payment(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    await api.advance(8 * 86_400)
    body = await trace(api, tx["transactionId"], keys.sandbox_sk)
    assert core(body)[-1] == ("status_changed", "pending", "expired", "deadline")


async def test_refund_and_chargeback(api: Api, keys: Keys) -> None:
    tx = await api.pay(amount=100)
    tx_id = tx["transactionId"]
    await simulate(api, tx_id, "paid", keys.sandbox_sk)
    funding = await api.pay(amount=100)  # the fees leave less than the refund: more balance
    await simulate(api, funding["transactionId"], "paid", keys.sandbox_sk)
    await api.advance(3 * 86_400)  # settled, so a refund has a balance to come from
    status, refund, _ = await api.post(f"/payments/{tx_id}/refund", keys.sandbox_sk, json={})
    assert status == 200, refund
    body = await trace(api, tx_id, keys.sandbox_sk)
    [entry] = kinds(body, "refund")
    assert entry["currency"] == "MXN" and entry["claimId"]
    assert core(body)[-1] == ("status_changed", "completed", "refunded", "refund")
    assert {"claim.opened", "payment.refunded"} <= {e["type"] for e in kinds(body, "event_emitted")}

    other = await api.pay()
    await simulate(api, other["transactionId"], "paid", keys.sandbox_sk)
    await simulate(api, other["transactionId"], "chargeback", keys.sandbox_sk)
    body = await trace(api, other["transactionId"], keys.sandbox_sk)
    [chargeback] = kinds(body, "chargeback")
    assert chargeback["cause"] == "simulate" and chargeback["claimId"]
    types = [e["type"] for e in kinds(body, "event_emitted")]
    assert types[-2:] == ["chargeback.created", "claim.opened"]


# -- events and deliveries ---------------------------------------------------------------------


@pytest.fixture
async def receiver(aiohttp_server: Any) -> Receiver:
    return await start_receiver(aiohttp_server)


async def test_events_and_their_deliveries(api: Api, keys: Keys, receiver: Receiver) -> None:
    receiver.policy = lambda item, seen: 500 if seen == 0 else 200
    sub = await subscribe(api, receiver.url, ["payment.completed"])
    tx = await api.pay()
    await simulate(api, tx["transactionId"], "paid", keys.sandbox_sk)
    await receiver.wait_for(1)
    await drain(api.client)
    await api.advance(61)  # the first retry
    await drain(api.client)
    body = await trace(api, tx["transactionId"], keys.sandbox_sk)
    [completed] = [e for e in kinds(body, "event_emitted") if e["type"] == "payment.completed"]
    first, second = kinds(body, "delivery")
    assert first["eventId"] == second["eventId"] == completed["eventId"]
    assert first["webhookId"] == sub["id"] and first["url"] == receiver.url
    assert (first["attempt"], first["httpStatus"], first["result"]) == (1, 500, "failed")
    assert first["deliveryStatus"] == "pending" and first["nextAttemptAt"]
    assert (second["attempt"], second["trigger"], second["httpStatus"]) == (2, "retry", 200)
    assert second["result"] == "succeeded" and second["deliveryStatus"] == "succeeded"
    assert first["at"] < second["at"]


async def test_a_managed_inbox_delivery_is_stored(api: Api, keys: Keys) -> None:
    await subscribe(api, None, ["payment.failed"])
    tx = await api.pay()
    await simulate(api, tx["transactionId"], "failed", keys.sandbox_sk)
    body = await trace(api, tx["transactionId"], keys.sandbox_sk)
    [delivery] = kinds(body, "delivery")
    assert delivery["result"] == "stored" and delivery["url"] is None


# -- payouts -----------------------------------------------------------------------------------


async def test_a_sandbox_payout_processing_then_completed(api: Api, keys: Keys) -> None:
    await fund(api, "USD", 100)
    status, body, _ = await send(api, "po_us_email_wallet", 10)
    assert status == 200, body
    payout_id = body["payout"]["id"]
    status, done, _ = await api.post(
        f"/me/payout/send/{payout_id}/simulate", keys.sandbox_sk, json={"action": "paid"}
    )
    assert status == 200, done
    got = await trace(api, payout_id, keys.sandbox_sk, "payouts")
    assert got["subject"] == "payout"
    assert core(got) == [
        ("created",),
        ("dispatched", "simulated"),
        ("provider_answer", "simulated"),
        ("simulate",),
        ("status_changed", "processing", "completed", "simulate"),
    ]
    assert [e["type"] for e in kinds(got, "event_emitted")] == ["payout.completed"]


async def test_production_payouts_completed_and_rejected(api: Api, keys: Keys) -> None:
    await production_usd(api, keys, 100)
    status, body, _ = await send(api, "po_us_email_wallet", 30, key=keys.live_sk)
    assert status == 200, body
    got = await trace(api, body["payout"]["id"], keys.live_sk, "payouts")
    assert got["environment"] == "production"
    assert core(got)[-1] == ("status_changed", "processing", "completed", "provider")

    rejected = {**WALLET, "account": "rejected@wallet.example"}
    status, body, _ = await send(api, "po_us_email_wallet", 30, rejected, key=keys.live_sk)
    error = assert_error(status, body, 422, "payout_dispatch_failed")
    got = await trace(api, error["details"]["payoutId"], keys.live_sk, "payouts")
    [answer] = kinds(got, "provider_answer")
    assert answer["accepted"] is False and answer["failureReason"]
    [change] = kinds(got, "status_changed")
    assert (change["from"], change["to"]) == ("processing", "failed")
    assert change["cause"] == f"provider: {answer['failureReason']}"


# -- who may read it ---------------------------------------------------------------------------


async def test_the_owner_reads_in_either_environment(api: Api, keys: Keys) -> None:
    sandbox = await api.pay()
    live = await api.pay(keys.live_sk)
    # Production keys are refused by the rest of the control plane, not here.
    status, _, _ = await api.get("/_sim/clock", keys.live_sk)
    assert status == 400
    for key in (keys.sandbox_sk, keys.live_sk, keys.legacy_sk):
        for tx in (sandbox, live):
            await trace(api, tx["transactionId"], key)
    # The API's base URL serves it too (generated clients).
    status, body, _ = await api.call(
        "GET", f"/_sim/payments/{live['transactionId']}/trace", keys.live_sk
    )
    assert status == 200 and body["entries"]


async def test_another_merchant_gets_not_found(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    for key in (keys.other_sk, keys.other_live_sk):
        status, body, _ = await api.get(f"/_sim/payments/{tx['transactionId']}/trace", key)
        assert assert_error(status, body, 404, "transaction_not_found")["param"] == "id"
    status, body, _ = await api.get("/_sim/payments/TXN-nosuchthing/trace", keys.sandbox_sk)
    assert_error(status, body, 404, "transaction_not_found")
    await fund(api, "USD", 100)
    _, sent, _ = await send(api, "po_us_email_wallet", 10)
    status, body, _ = await api.get(f"/_sim/payouts/{sent['payout']['id']}/trace", keys.other_sk)
    assert_error(status, body, 404, "payout_not_found")
    status, body, _ = await api.get("/_sim/payouts/po_nosuchthing/trace", keys.sandbox_sk)
    assert_error(status, body, 404, "payout_not_found")


async def test_publishable_and_missing_keys_are_refused(api: Api, keys: Keys) -> None:
    tx = await api.pay()
    path = f"/_sim/payments/{tx['transactionId']}/trace"
    status, body, _ = await api.get(path, keys.sandbox_pk)
    assert status in (401, 403) and "error" in body
    status, body, _ = await api.get(path)
    assert status == 401 and "error" in body


# -- bound and secrecy -------------------------------------------------------------------------


@pytest.fixture
def small_trace_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, trace_limit=8)


async def test_a_trace_keeps_its_first_and_newest_entries(
    aiohttp_client: Any, small_trace_settings: Settings, keys: Keys
) -> None:
    client: TestClient = await aiohttp_client(create_app(small_trace_settings))
    api = Api(client)
    await subscribe(api, None)  # a managed inbox: one stored delivery per event
    tx = await api.pay(amount=200)
    tx_id = tx["transactionId"]
    await simulate(api, tx_id, "paid", keys.sandbox_sk)
    await api.advance(3 * 86_400)
    for _ in range(3):
        status, body, _ = await api.post(
            f"/payments/{tx_id}/refund", keys.sandbox_sk, json={"amount": 10}
        )
        assert status == 200, body
    body = await trace(api, tx_id, keys.sandbox_sk)
    # 8 stored, after the 2 creation entries derived from the payment (never stored, see
    # PaymentService.trace_view).
    assert len(body["entries"]) == 2 + 8 and body["truncated"] > 0
    # The first half (how it began) stays; the rest is the newest.
    assert [e["kind"] for e in body["entries"][:4]] == [
        "created",
        "provider_chosen",
        "simulate",
        "status_changed",
    ]
    assert body["entries"][-1]["kind"] == "delivery"
    assert body["entries"][-2]["kind"] == "event_emitted"
    assert body["entries"][-2]["type"] == "payment.refunded"


async def test_no_api_response_carries_the_trace(api: Api, keys: Keys, receiver: Receiver) -> None:
    await subscribe(api, receiver.url)  # sandbox: production webhooks need https
    sandbox = await pay_simulated(api, "paid", keys.sandbox_sk)
    tx = await api.pay(keys.live_sk, paymentMethodId="1004")
    tx_id = tx["transactionId"]
    await api.advance(31)
    await receiver.wait_for(2)
    await drain(api.client)
    answers = [json.dumps(tx), json.dumps(sandbox)]
    for key, some_id in ((keys.live_sk, tx_id), (keys.sandbox_sk, sandbox["transactionId"])):
        for path in (f"/payments/{some_id}", f"/transactions/{some_id}", "/payments"):
            status, body, _ = await api.get(path, key)
            assert status == 200
            answers.append(json.dumps(body))
    answers += [item.body.decode() for item in receiver.received]
    assert len(answers) == 10
    for text in answers:
        for telltale in ("prv_orbita_cards", "routing_attempt", "provider_chosen", "entries"):
            assert telltale not in text


# -- the provider world's pathologies ------------------------------------------------------------


async def test_a_timed_out_provider_is_an_attempt(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_transbank_cl", behaviour="timeout")
    tx = await api.pay(keys.live_sk, **CL_CARD)
    body = await trace(api, tx["transactionId"], keys.live_sk)
    assert core(body)[1:] == [
        ("routing_attempt", "prv_transbank_cl", "timed_out"),
        ("routing_attempt", "prv_cardhub", "accepted"),
        ("provider_chosen", "prv_cardhub"),
    ]


async def test_a_duplicated_callback_is_received_once_and_ignored_once(
    api: Api, keys: Keys
) -> None:
    await script(api, keys, "prv_stp_mx", callback={"mode": "duplicate"})
    tx = await api.pay(keys.live_sk)
    await api.advance(60)
    body = await trace(api, tx["transactionId"], keys.live_sk)
    [received] = kinds(body, "callback_received")
    [ignored] = kinds(body, "callback_ignored")
    assert (received["delivery"], received["outcome"]) == (1, "paid")
    assert ignored["delivery"] == 2 and ignored["reason"].startswith("duplicate")
    assert received["at"] < ignored["at"]
    assert len(kinds(body, "status_changed")) == 1
    assert [e["type"] for e in kinds(body, "event_emitted")] == ["payment.completed"]


async def test_a_late_callback_after_expiry(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_stp_mx", callback={"afterSeconds": SPEI_DUE + 3600})
    tx = await api.pay(keys.live_sk)
    await api.advance(SPEI_DUE + 3600)
    body = await trace(api, tx["transactionId"], keys.live_sk)
    assert core(body)[-2:] == [
        ("status_changed", "pending", "expired", "deadline"),
        ("callback_ignored", "prv_stp_mx", "paid"),
    ]
    assert kinds(body, "callback_ignored")[0]["reason"] == "late: the payment is already expired"


async def test_a_production_payout_rejected_after_processing(api: Api, keys: Keys) -> None:
    await production_usd(api, keys, 100)
    await script(
        api, keys, "prv_payouts_latam", callback={"afterSeconds": 60, "outcome": "rejected"}
    )
    status, out, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    assert status == 200 and out["payout"]["status"] == "processing", out
    payout_id = out["payout"]["id"]
    before = await trace(api, payout_id, keys.live_sk, "payouts")
    [answer] = kinds(before, "provider_answer")
    assert answer["accepted"] is True and not kinds(before, "status_changed")
    await api.advance(60)
    got = await trace(api, payout_id, keys.live_sk, "payouts")
    assert core(got)[-2:] == [
        ("callback_received", "prv_payouts_latam", "rejected"),
        (
            "status_changed",
            "processing",
            "failed",
            "provider_callback: rejected_by_beneficiary_bank",
        ),
    ]
    assert [e["type"] for e in kinds(got, "event_emitted")] == ["payout.failed"]


async def test_a_reset_clears_every_trace(api: Api, keys: Keys) -> None:
    tx = await api.pay(keys.live_sk, paymentMethodId="1004")  # a failover: derived from it
    for _ in range(2):  # a state change is stored in the payment's trace
        await simulate(api, (await api.pay())["transactionId"], "paid", keys.sandbox_sk)
    traces = api.client.server.app[STORE].table("traces")
    assert len(traces) == 2
    status, body, _ = await api.post("/_sim/reset", keys.sandbox_sk)
    assert status == 200, body
    assert len(api.client.server.app[STORE].table("traces")) == 0
    status, body, _ = await api.get(f"/_sim/payments/{tx['transactionId']}/trace", keys.live_sk)
    assert_error(status, body, 404, "transaction_not_found")
