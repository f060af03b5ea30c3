"""The provider world through production flows (issue 15): every scripted behaviour and callback
pathology, on the simulated clock, seen through the API a merchant uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from simulator.app import create_app
from simulator.http.keys import BUS, CONTEXT
from simulator.settings import Settings
from tests.api.test_lifecycle import POLL, align_to_poll
from tests.api.test_payouts import balances
from tests.api.test_payouts_send import production_usd, send
from tests.conftest import Api, Keys, assert_error

SPEI = {"amount": 50, "paymentMethodId": "1001"}  # MX, one provider: prv_stp_mx
CL_CARD = {"amount": 20, "paymentMethodId": "1020"}  # CL card: prv_transbank_cl, prv_cardhub
US_CARD = {"amount": 20, "paymentMethodId": "1025"}  # US card: prv_cardhub alone
SPEI_DUE = 72 * 3600


class Events:
    """Every event the app emits from the moment the probe is attached."""

    def __init__(self, client: TestClient) -> None:
        self.seen: list[dict[str, Any]] = []
        client.server.app[BUS].subscribe(self.seen.append)

    def about(self, object_id: str) -> list[str]:
        return [e["type"] for e in self.seen if e["data"].get("id") == object_id]


@pytest.fixture
def events(client: TestClient) -> Events:
    return Events(client)


async def script(api: Api, keys: Keys, provider: str, **body: Any) -> dict[str, Any]:
    status, out, _ = await api.call(
        "PATCH", f"/_sim/providers/{provider}", keys.sandbox_sk, json=body
    )
    assert status == 200, out
    return out


async def incident(api: Api, keys: Keys, provider: str, **body: Any) -> dict[str, Any]:
    status, out, _ = await api.post(
        f"/_sim/providers/{provider}/incidents", keys.sandbox_sk, json=body
    )
    assert status == 201, out
    return out


async def counts(api: Api, keys: Keys, provider: str) -> dict[str, int]:
    status, out, _ = await api.get(f"/_sim/providers/{provider}", keys.sandbox_sk)
    assert status == 200, out
    return out["counts"]


async def charge(api: Api, key: str, body: dict[str, Any]) -> tuple[int, Any]:
    status, out, _ = await api.post("/payments", key, json=body)
    return status, out


async def status_of(api: Api, keys: Keys, tx_id: str) -> str:
    status, out, _ = await api.get(f"/payments/{tx_id}", keys.live_sk)
    assert status == 200, out
    return str(out["status"])


# -- outages, windows, failover -------------------------------------------------------------


async def test_an_outage_fails_over_to_the_next_provider(api: Api, keys: Keys) -> None:
    await incident(api, keys, "prv_transbank_cl", behaviour="outage", durationSeconds=600)
    status, out = await charge(api, keys.live_sk, CL_CARD)
    assert status == 200, out
    assert (await counts(api, keys, "prv_transbank_cl"))["unavailable"] == 1
    assert (await counts(api, keys, "prv_cardhub"))["accepted"] == 1


async def test_with_every_provider_out_the_cascade_is_exhausted(api: Api, keys: Keys) -> None:
    await incident(api, keys, "prv_transbank_cl", behaviour="outage", durationSeconds=600)
    await incident(api, keys, "prv_cardhub", behaviour="outage", durationSeconds=600)
    status, out = await charge(api, keys.live_sk, CL_CARD)
    error = assert_error(status, out, 422, "cascade_exhausted")
    assert error["details"]["attempts"] == [
        {"provider": "prv_transbank_cl", "outcome": "unavailable"},
        {"provider": "prv_cardhub", "outcome": "unavailable"},
    ]


async def test_the_provider_is_back_when_the_clock_passes_the_window(api: Api, keys: Keys) -> None:
    await incident(
        api, keys, "prv_stp_mx", behaviour="outage", durationSeconds=600, startsInSeconds=60
    )
    assert (await charge(api, keys.live_sk, SPEI))[0] == 200  # not started yet
    await api.advance(60)
    status, out = await charge(api, keys.live_sk, SPEI)
    assert_error(status, out, 422, "cascade_exhausted")
    await api.advance(599)
    assert (await charge(api, keys.live_sk, SPEI))[0] == 422  # one second left
    await api.advance(1)
    assert (await charge(api, keys.live_sk, SPEI))[0] == 200
    assert await counts(api, keys, "prv_stp_mx") == {
        "charges": 4,
        "accepted": 2,
        "declined": 0,
        "unavailable": 2,
        "timedOut": 0,
        "noInstructions": 0,
        "callbacksSent": 1,  # the first charge's, 30 s after it (the clock moved 660 s)
        "callbacksIgnored": 0,
    }


async def test_a_provider_that_has_accepted_follows_each_new_script_at_once(
    api: Api, keys: Keys
) -> None:
    """An accepting provider's answer is built once per script (the production hot path): every
    way of scripting it must be seen by the very next charge, and undone as soon as it ends."""
    spei = "prv_stp_mx"
    assert (await charge(api, keys.live_sk, SPEI))[0] == 200
    await script(api, keys, spei, behaviour="decline", declineReason="do_not_honor")
    assert_error(*await charge(api, keys.live_sk, SPEI), 422, "cascade_exhausted")
    await script(api, keys, spei, behaviour="accept")
    assert (await charge(api, keys.live_sk, SPEI))[0] == 200
    await script(api, keys, spei, latencySeconds=31)
    assert_error(*await charge(api, keys.live_sk, SPEI), 422, "cascade_exhausted")
    await script(api, keys, spei, latencySeconds=None, declineRate=1)
    assert_error(*await charge(api, keys.live_sk, SPEI), 422, "cascade_exhausted")
    await script(api, keys, spei, declineRate=0)
    await incident(api, keys, spei, behaviour="outage", durationSeconds=60)
    assert_error(*await charge(api, keys.live_sk, SPEI), 422, "cascade_exhausted")
    await api.advance(60)
    assert (await charge(api, keys.live_sk, SPEI))[0] == 200
    status, _, _ = await api.post("/_sim/providers/reset", keys.sandbox_sk, json={})
    assert status == 200
    await script(api, keys, spei, callback={"afterSeconds": None})
    # Just past a 5-minute boundary: the reconciliation poll must not settle it in the next 30 s.
    await align_to_poll(api, keys, after=1)
    status, out = await charge(api, keys.live_sk, SPEI)
    assert status == 200, out
    await api.advance(30)  # the fixture's callback would have come by now; none was planned
    assert await status_of(api, keys, out["transactionId"]) == "pending"
    totals = await counts(api, keys, spei)
    assert (totals["charges"], totals["accepted"]) == (1, 1)  # counted since the reset


async def test_sandbox_ignores_the_provider_world(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_stp_mx", behaviour="outage")
    await script(api, keys, "prv_cardhub", behaviour="decline", declineReason="card_declined")
    assert (await charge(api, keys.sandbox_sk, SPEI))[0] == 200
    assert (await charge(api, keys.sandbox_sk, US_CARD))[0] == 200
    assert (await counts(api, keys, "prv_stp_mx"))["charges"] == 0
    assert (await charge(api, keys.live_sk, SPEI))[0] == 422


# -- declines -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reason",
    [
        "card_declined",
        "insufficient_funds",
        "expired_card",
        "fraud_blocked",
        "kyc_required",
        "three_ds_required",
        "three_ds_failed",
    ],
)
async def test_each_issuer_decline_gives_its_spec_error(api: Api, keys: Keys, reason: str) -> None:
    await script(api, keys, "prv_cardhub", behaviour="decline", declineReason=reason)
    status, out = await charge(api, keys.live_sk, US_CARD)
    error = assert_error(status, out, 402, reason)
    assert error["decline_code"] == reason and error["type"] == "card_error"
    assert (await counts(api, keys, "prv_cardhub"))["declined"] == 1


async def test_an_acquirer_refusal_moves_the_cascade_on(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_transbank_cl", behaviour="decline", declineReason="do_not_honor")
    assert (await charge(api, keys.live_sk, CL_CARD))[0] == 200
    await script(api, keys, "prv_cardhub", behaviour="decline", declineReason="do_not_honor")
    status, out = await charge(api, keys.live_sk, CL_CARD)
    error = assert_error(status, out, 422, "cascade_exhausted")
    assert [a["outcome"] for a in error["details"]["attempts"]] == [
        "declined:do_not_honor",
        "declined:do_not_honor",
    ]


async def test_a_decline_on_a_bank_rail_exhausts_the_cascade(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_stp_mx", behaviour="decline", declineReason="insufficient_funds")
    status, out = await charge(api, keys.live_sk, SPEI)
    error = assert_error(status, out, 422, "cascade_exhausted")
    assert error["details"]["attempts"] == [
        {"provider": "prv_stp_mx", "outcome": "declined:insufficient_funds"}
    ]


async def test_no_instructions_is_502(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_stp_mx", behaviour="no_instructions")
    status, out = await charge(api, keys.live_sk, SPEI)
    error = assert_error(status, out, 502, "payment_instructions_unavailable")
    assert error["details"]["provider"] == "prv_stp_mx"
    assert (await counts(api, keys, "prv_stp_mx"))["noInstructions"] == 1


async def outcomes(api: Api, keys: Keys, n: int = 10) -> list[int]:
    return [(await charge(api, keys.live_sk, SPEI))[0] for _ in range(n)]


async def test_a_seeded_decline_rate_declines_the_same_charges_on_every_server(
    aiohttp_client: Any, tmp_path: Path, keys: Keys
) -> None:
    runs = []
    # Different server seeds and data dirs: only the provider's seed decides.
    for server_seed in (1, 2):
        settings = Settings(
            data_dir=tmp_path / f"data{server_seed}",
            tick_seconds=0,
            seed=server_seed,
            rate_limit=False,
        )
        api = Api(await aiohttp_client(create_app(settings)))
        await script(
            api, keys, "prv_stp_mx", declineRate=0.3, declineReason="insufficient_funds", seed=7
        )
        runs.append(await outcomes(api, keys))
        provider_counts = await counts(api, keys, "prv_stp_mx")
        assert provider_counts["declined"] == runs[-1].count(422)
    assert runs[0] == runs[1]
    assert 200 in runs[0] and 422 in runs[0]
    # Scripting the rate again restarts the draws: the same ten outcomes once more.
    await script(api, keys, "prv_stp_mx", declineRate=0.3, seed=7)
    assert await outcomes(api, keys) == runs[0]


async def test_the_draws_continue_across_a_restart(
    aiohttp_client: Any, tmp_path: Path, keys: Keys
) -> None:
    def settings(name: str) -> Settings:
        return Settings(data_dir=tmp_path / name, tick_seconds=0, seed=3, rate_limit=False)

    straight = Api(await aiohttp_client(create_app(settings("straight"))))
    await script(straight, keys, "prv_stp_mx", declineRate=0.5, seed=11)
    expected = await outcomes(straight, keys, 8)

    first = Api(await aiohttp_client(create_app(settings("restarted"))))
    await script(first, keys, "prv_stp_mx", declineRate=0.5, seed=11)
    got = await outcomes(first, keys, 4)
    await first.client.close()
    second = Api(await aiohttp_client(create_app(settings("restarted"))))
    got += await outcomes(second, keys, 4)
    assert got == expected


# -- timeouts -------------------------------------------------------------------------------


async def test_a_hanging_provider_times_out_and_the_cascade_moves_on(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_transbank_cl", behaviour="timeout")
    assert (await charge(api, keys.live_sk, CL_CARD))[0] == 200
    assert (await counts(api, keys, "prv_transbank_cl"))["timedOut"] == 1
    await script(api, keys, "prv_cardhub", behaviour="timeout")
    status, out = await charge(api, keys.live_sk, CL_CARD)
    error = assert_error(status, out, 422, "cascade_exhausted")
    assert [a["outcome"] for a in error["details"]["attempts"]] == ["timed_out", "timed_out"]


async def test_latency_beyond_the_platform_timeout_times_out(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_stp_mx", latencySeconds=29)
    assert (await charge(api, keys.live_sk, SPEI))[0] == 200  # slow, but in time
    await script(api, keys, "prv_stp_mx", latencySeconds=31)
    status, out = await charge(api, keys.live_sk, SPEI)
    error = assert_error(status, out, 422, "cascade_exhausted")
    assert error["details"]["attempts"] == [{"provider": "prv_stp_mx", "outcome": "timed_out"}]


# -- callbacks ------------------------------------------------------------------------------


async def test_a_delayed_callback_confirms_when_it_arrives(
    api: Api, keys: Keys, events: Events
) -> None:
    await script(api, keys, "prv_stp_mx", callback={"afterSeconds": 120})
    tx = (await api.pay(keys.live_sk))["transactionId"]
    await api.advance(119)
    assert await status_of(api, keys, tx) == "pending"
    await api.advance(1)
    assert await status_of(api, keys, tx) == "completed"
    assert events.about(tx) == ["payment.completed"]


async def test_with_no_callback_the_poll_settles_it(api: Api, keys: Keys, events: Events) -> None:
    await script(api, keys, "prv_stp_mx", callback={"afterSeconds": None})
    await align_to_poll(api, keys, after=1)
    tx = (await api.pay(keys.live_sk))["transactionId"]
    await api.advance(POLL - 2)
    assert await status_of(api, keys, tx) == "pending"
    await api.advance(1)
    assert await status_of(api, keys, tx) == "completed"
    assert events.about(tx) == ["payment.completed"]
    assert (await counts(api, keys, "prv_stp_mx"))["callbacksSent"] == 0


async def test_a_callback_reporting_failure_fails_the_payment(
    api: Api, keys: Keys, events: Events
) -> None:
    await script(api, keys, "prv_stp_mx", callback={"outcome": "failed"})
    tx = (await api.pay(keys.live_sk))["transactionId"]
    await api.advance(31)
    assert await status_of(api, keys, tx) == "failed"
    assert events.about(tx) == ["payment.failed"]


async def test_a_duplicated_callback_changes_the_payment_once(
    api: Api, keys: Keys, events: Events, client: TestClient
) -> None:
    await script(api, keys, "prv_stp_mx", callback={"mode": "duplicate"})
    tx = (await api.pay(keys.live_sk))["transactionId"]
    await api.advance(60)
    assert await status_of(api, keys, tx) == "completed"
    assert events.about(tx) == ["payment.completed"]
    provider_counts = await counts(api, keys, "prv_stp_mx")
    assert (provider_counts["callbacksSent"], provider_counts["callbacksIgnored"]) == (2, 1)
    log = client.server.app[CONTEXT].callbacks.for_object(tx)
    assert [(c["delivery"], c["applied"], c["ignoredReason"]) for c in log] == [
        (1, True, None),
        (2, False, "duplicate"),
    ]


async def test_a_late_callback_after_expiry_is_ignored_and_recorded(
    api: Api, keys: Keys, events: Events, client: TestClient
) -> None:
    await script(api, keys, "prv_stp_mx", callback={"afterSeconds": SPEI_DUE + 3600})
    tx = (await api.pay(keys.live_sk))["transactionId"]
    await api.advance(SPEI_DUE)
    assert await status_of(api, keys, tx) == "expired"
    expired = events.about(tx)
    assert expired  # the expiry's own event
    await api.advance(3600)
    assert await status_of(api, keys, tx) == "expired"
    assert events.about(tx) == expired
    (late,) = client.server.app[CONTEXT].callbacks.for_object(tx)
    assert late["applied"] is False and late["ignoredReason"] == "late"
    assert late["statusBefore"] == "expired" and late["outcome"] == "paid"
    assert (await counts(api, keys, "prv_stp_mx"))["callbacksIgnored"] == 1


async def test_a_late_success_after_a_failure_changes_nothing(
    api: Api, keys: Keys, events: Events
) -> None:
    await script(api, keys, "prv_stp_mx", callback={"outcome": "failed", "mode": "duplicate"})
    tx = (await api.pay(keys.live_sk))["transactionId"]
    await script(api, keys, "prv_stp_mx", callback={"outcome": "paid"})  # later charges only
    await api.advance(60)
    assert await status_of(api, keys, tx) == "failed"
    assert events.about(tx) == ["payment.failed"]


# -- payouts --------------------------------------------------------------------------------


async def test_a_payout_rejected_after_processing_fails_and_reverses_the_debit(
    api: Api, keys: Keys, events: Events, client: TestClient
) -> None:
    await production_usd(api, keys, 100)
    await script(
        api, keys, "prv_payouts_latam", callback={"afterSeconds": 60, "outcome": "rejected"}
    )
    status, out, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    assert status == 200, out
    payout = out["payout"]
    assert payout["status"] == "processing" and payout["environment"] == "production"
    assert (await balances(api, keys.live_sk))["USD"]["available"] == 40
    await api.advance(60)
    status, got, _ = await api.get(f"/me/payout/send/{payout['id']}", keys.live_sk)
    assert got["payout"]["status"] == "failed"
    assert got["payout"]["failureReason"] == "rejected_by_beneficiary_bank"
    assert (await balances(api, keys.live_sk))["USD"] == {
        "available": 100,
        "pending": 0,
        "reserved": 0,
    }
    (failed,) = [e for e in events.seen if e["type"] == "payout.failed"]
    assert failed["data"]["id"] == payout["id"] and failed["environment"] == "production"
    assert failed["data"]["failureReason"] == "rejected_by_beneficiary_bank"


async def test_a_payout_completed_by_a_duplicated_webhook_completes_once(
    api: Api, keys: Keys, events: Events
) -> None:
    await production_usd(api, keys, 100)
    await script(api, keys, "prv_payouts_latam", callback={"afterSeconds": 30, "mode": "duplicate"})
    status, out, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    assert status == 200 and out["payout"]["status"] == "processing"
    await api.advance(60)
    assert events.about(out["payout"]["id"]) == ["payout.completed"]
    assert (await counts(api, keys, "prv_payouts_latam"))["callbacksIgnored"] == 1


async def test_a_payout_provider_rejecting_at_dispatch_is_422(api: Api, keys: Keys) -> None:
    await production_usd(api, keys, 100)
    await script(api, keys, "prv_payouts_latam", behaviour="reject")
    status, out, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    error = assert_error(status, out, 422, "payout_dispatch_failed")
    assert error["details"]["failureReason"] == "rejected_by_provider"
    assert (await balances(api, keys.live_sk))["USD"]["available"] == 100


async def test_a_payout_provider_outage_is_503_and_reverses(api: Api, keys: Keys) -> None:
    await production_usd(api, keys, 100)
    await incident(api, keys, "prv_payouts_latam", behaviour="outage", durationSeconds=60)
    status, out, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    error = assert_error(status, out, 503, "service_unavailable")
    assert error["details"]["failureReason"] == "provider_unavailable"
    assert (await balances(api, keys.live_sk))["USD"]["available"] == 100
    await api.advance(60)
    status, out, _ = await send(api, "po_us_email_wallet", 60, key=keys.live_sk)
    assert status == 200 and out["payout"]["status"] == "completed"
    assert (await counts(api, keys, "prv_payouts_latam"))["unavailable"] == 1


async def test_sandbox_payouts_ignore_the_payout_provider(api: Api, keys: Keys) -> None:
    await script(api, keys, "prv_payouts_latam", behaviour="reject")
    status, _, _ = await api.post(
        "/me/payout/fund-sandbox", keys.sandbox_sk, json={"currency": "USD", "amount": 100}
    )
    assert status == 200
    status, out, _ = await send(api, "po_us_email_wallet", 60)
    assert status == 200 and out["payout"]["status"] == "processing"
