"""The provider world's control plane (design.md 1.5): list, read, script, incidents, reset, and
every refusal (400 naming the field, nothing changed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.app import create_app
from simulator.domain.catalog import (
    PAYIN_BEHAVIOURS,
    PAYIN_DECLINE_REASONS,
    PAYOUT_BEHAVIOURS,
    PAYOUT_REJECT_REASONS,
)
from simulator.domain.providers.world import COUNTS
from simulator.openapi.document import document
from simulator.settings import Settings
from tests.conftest import Api, Keys, assert_error

# -- reads ----------------------------------------------------------------------------------


async def test_every_provider_is_listed_with_its_fixture_behaviour(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/_sim/providers", keys.sandbox_sk)
    assert status == 200
    by_id = {p["id"]: p for p in body["data"]}
    stp = by_id["prv_stp_mx"]
    assert stp == {
        "id": "prv_stp_mx",
        "name": "Transferencias Ágiles MX",
        "kind": "payin",
        "rails": ["spei"],
        "behaviour": "accept",
        "declineReason": None,
        "declineRate": 0.0,
        "seed": 0,
        "latencySeconds": None,
        "callback": {"afterSeconds": 30, "outcome": "paid", "mode": "once"},
        "effectiveBehaviour": "accept",
        "incidents": [],
        "counts": {
            "charges": 0,
            "accepted": 0,
            "declined": 0,
            "unavailable": 0,
            "timedOut": 0,
            "noInstructions": 0,
            "callbacksSent": 0,
            "callbacksIgnored": 0,
        },
        "appliesTo": "production",
    }
    assert by_id["prv_orbita_cards"]["behaviour"] == "outage"
    payout = by_id["prv_payouts_latam"]
    assert payout["kind"] == "payout" and "spei" in payout["rails"]
    assert payout["callback"] == {"afterSeconds": 0, "outcome": "completed", "mode": "once"}
    assert by_id["prv_sandbox"]["appliesTo"] == "sandbox"


async def test_one_provider_and_the_api_alias(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/_sim/providers/prv_cardhub", keys.sandbox_sk)
    assert status == 200 and body["id"] == "prv_cardhub"
    response = await api.client.get(
        "/api/v1/_sim/providers/prv_cardhub",
        headers={"Authorization": f"Bearer {keys.sandbox_sk}"},
    )
    assert response.status == 200 and (await response.json())["id"] == "prv_cardhub"


async def test_an_unknown_provider_is_404(api: Api, keys: Keys) -> None:
    for method, path, body in [
        ("GET", "/_sim/providers/prv_nowhere", None),
        ("PATCH", "/_sim/providers/prv_nowhere", {"behaviour": "outage"}),
        ("POST", "/_sim/providers/prv_nowhere/incidents", {"behaviour": "outage",
                                                            "durationSeconds": 60}),
    ]:  # fmt: skip
        status, out, _ = await api.call(method, path, keys.sandbox_sk, json=body)
        error = assert_error(status, out, 404, "provider_not_found")
        assert error["param"] == "id"


async def test_production_keys_are_refused(api: Api, keys: Keys) -> None:
    status, body, _ = await api.get("/_sim/providers", keys.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    status, body, _ = await api.call(
        "PATCH", "/_sim/providers/prv_stp_mx", keys.live_sk, json={"behaviour": "outage"}
    )
    assert_error(status, body, 400, "production_key_refused")


# -- scripting ------------------------------------------------------------------------------


async def patch(api: Api, keys: Keys, provider: str, body: Any) -> tuple[int, Any]:
    status, out, _ = await api.call(
        "PATCH", f"/_sim/providers/{provider}", keys.sandbox_sk, json=body
    )
    return status, out


async def test_patch_changes_only_the_fields_sent(api: Api, keys: Keys) -> None:
    status, body = await patch(
        api,
        keys,
        "prv_cardhub",
        {"declineRate": 0.3, "declineReason": "insufficient_funds", "seed": 7},
    )
    assert status == 200, body
    assert body["declineRate"] == 0.3 and body["seed"] == 7
    assert body["declineReason"] == "insufficient_funds" and body["behaviour"] == "accept"
    status, body = await patch(api, keys, "prv_cardhub", {"callback": {"mode": "duplicate"}})
    assert body["callback"] == {"afterSeconds": 30, "outcome": "paid", "mode": "duplicate"}
    assert body["declineRate"] == 0.3
    status, body = await patch(api, keys, "prv_cardhub", {"callback": {"afterSeconds": None}})
    assert body["callback"]["afterSeconds"] is None
    status, body = await patch(api, keys, "prv_payouts_latam", {"behaviour": "reject"})
    assert status == 200 and body["behaviour"] == "reject"
    assert body["declineReason"] == "rejected_by_provider"


@pytest.mark.parametrize(
    ("provider", "body", "param"),
    [
        ("prv_stp_mx", {"colour": "red"}, "colour"),
        ("prv_stp_mx", {"behaviour": "sleepy"}, "behaviour"),
        ("prv_stp_mx", {"behaviour": 3}, "behaviour"),
        ("prv_stp_mx", {"declineRate": 1.5}, "declineRate"),
        ("prv_stp_mx", {"declineRate": -0.1}, "declineRate"),
        ("prv_stp_mx", {"declineRate": "0.3"}, "declineRate"),
        ("prv_stp_mx", {"declineReason": "bad_vibes"}, "declineReason"),
        ("prv_stp_mx", {"seed": -1}, "seed"),
        ("prv_stp_mx", {"latencySeconds": -5}, "latencySeconds"),
        ("prv_stp_mx", {"callback": {"afterSeconds": -1}}, "callback.afterSeconds"),
        ("prv_stp_mx", {"callback": {"outcome": "completed"}}, "callback.outcome"),
        ("prv_stp_mx", {"callback": {"mode": "thrice"}}, "callback.mode"),
        ("prv_stp_mx", {"callback": {"when": 3}}, "callback.when"),
        ("prv_stp_mx", {"behaviour": "reject"}, "behaviour"),
        ("prv_payouts_latam", {"behaviour": "timeout"}, "behaviour"),
        ("prv_payouts_latam", {"declineReason": "insufficient_funds"}, "declineReason"),
        ("prv_payouts_latam", {"declineRate": 0.5}, "declineRate"),
        ("prv_payouts_latam", {"callback": {"outcome": "paid"}}, "callback.outcome"),
        ("prv_sandbox", {"behaviour": "outage"}, "id"),
    ],
)
async def test_a_bad_patch_is_400_naming_the_field_and_changes_nothing(
    api: Api, keys: Keys, provider: str, body: dict[str, Any], param: str
) -> None:
    _, before, _ = await api.get(f"/_sim/providers/{provider}", keys.sandbox_sk)
    status, out = await patch(api, keys, provider, {"seed": 99, **body})
    error = assert_error(status, out, 400, "invalid_request")
    assert error["param"] == param, error
    _, after, _ = await api.get(f"/_sim/providers/{provider}", keys.sandbox_sk)
    assert after == before


async def test_scripting_the_sandbox_provider_says_sandbox_always_accepts(
    api: Api, keys: Keys
) -> None:
    status, out = await patch(api, keys, "prv_sandbox", {"behaviour": "outage"})
    error = assert_error(status, out, 400, "invalid_request")
    assert "sandbox cascade always accepts" in error["message"]
    assert "production keys only" in error["message"]


async def test_a_payin_behaviour_on_the_payout_provider_says_which_kind(
    api: Api, keys: Keys
) -> None:
    status, out = await patch(api, keys, "prv_payouts_latam", {"behaviour": "decline"})
    error = assert_error(status, out, 400, "invalid_request")
    assert "payout provider" in error["message"] and "accept, reject, outage" in error["message"]


# -- incidents ------------------------------------------------------------------------------


async def incident(api: Api, keys: Keys, provider: str, body: Any) -> tuple[int, Any]:
    status, out, _ = await api.post(
        f"/_sim/providers/{provider}/incidents", keys.sandbox_sk, json=body
    )
    return status, out


async def test_an_incident_is_active_for_its_window_then_dropped(api: Api, keys: Keys) -> None:
    clock = await api.advance(1)
    status, made = await incident(
        api, keys, "prv_stp_mx", {"behaviour": "outage", "durationSeconds": 600,
                                  "startsInSeconds": 60}
    )  # fmt: skip
    assert status == 201, made
    assert made["id"].startswith("inc_") and made["behaviour"] == "outage"
    assert made["active"] is False and made["declineReason"] is None
    assert made["startsAt"] > clock["now"]
    _, provider, _ = await api.get("/_sim/providers/prv_stp_mx", keys.sandbox_sk)
    assert provider["effectiveBehaviour"] == "accept"
    assert provider["incidents"] == [made]
    await api.advance(60)
    _, provider, _ = await api.get("/_sim/providers/prv_stp_mx", keys.sandbox_sk)
    assert provider["effectiveBehaviour"] == "outage"
    assert provider["incidents"][0]["active"] is True
    await api.advance(600)
    _, provider, _ = await api.get("/_sim/providers/prv_stp_mx", keys.sandbox_sk)
    assert provider["effectiveBehaviour"] == "accept" and provider["incidents"] == []


async def test_a_decline_incident_takes_the_reason_given_or_the_providers(
    api: Api, keys: Keys
) -> None:
    status, made = await incident(
        api, keys, "prv_cardhub", {"behaviour": "decline", "durationSeconds": 60,
                                   "declineReason": "fraud_blocked"}
    )  # fmt: skip
    assert status == 201 and made["declineReason"] == "fraud_blocked"
    status, made = await incident(
        api, keys, "prv_andes_acquiring", {"behaviour": "decline", "durationSeconds": 60}
    )
    assert status == 201 and made["declineReason"] == "do_not_honor"


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [
        ({"durationSeconds": 60}, 400, "missing_field", "behaviour"),
        ({"behaviour": "outage"}, 400, "missing_field", "durationSeconds"),
        ({"behaviour": "outage", "durationSeconds": -60}, 400, "invalid_request",
         "durationSeconds"),
        ({"behaviour": "outage", "durationSeconds": 0}, 400, "invalid_request",
         "durationSeconds"),
        ({"behaviour": "outage", "durationSeconds": 60, "startsInSeconds": -1}, 400,
         "invalid_request", "startsInSeconds"),
        ({"behaviour": "nap", "durationSeconds": 60}, 400, "invalid_request", "behaviour"),
        ({"behaviour": "reject", "durationSeconds": 60}, 400, "invalid_request", "behaviour"),
        ({"behaviour": "decline", "durationSeconds": 60, "declineReason": "nope"}, 400,
         "invalid_request", "declineReason"),
        ({"behaviour": "outage", "durationSeconds": 60, "until": "later"}, 400,
         "invalid_request", "until"),
    ],
)  # fmt: skip
async def test_a_bad_incident_is_refused_and_changes_nothing(
    api: Api, keys: Keys, body: dict[str, Any], status: int, code: str, param: str
) -> None:
    got, out = await incident(api, keys, "prv_stp_mx", body)
    error = assert_error(got, out, status, code)
    assert error["param"] == param, error
    _, provider, _ = await api.get("/_sim/providers/prv_stp_mx", keys.sandbox_sk)
    assert provider["incidents"] == []


# -- reset and persistence ------------------------------------------------------------------


async def test_reset_brings_back_the_fixtures(api: Api, keys: Keys) -> None:
    _, before, _ = await api.get("/_sim/providers", keys.sandbox_sk)
    await patch(api, keys, "prv_stp_mx", {"behaviour": "decline", "declineRate": 0.5})
    await incident(api, keys, "prv_cardhub", {"behaviour": "outage", "durationSeconds": 600})
    status, out, _ = await api.post(
        "/payments", keys.live_sk, json={"amount": 50, "paymentMethodId": "1001"}
    )
    assert_error(status, out, 422, "cascade_exhausted")
    status, body, _ = await api.post("/_sim/providers/reset", keys.sandbox_sk)
    assert status == 200
    assert body == before
    _, after, _ = await api.get("/_sim/providers", keys.sandbox_sk)
    assert after == before


async def test_scripting_and_counts_survive_a_restart(
    aiohttp_client: Any, tmp_path: Path, keys: Keys
) -> None:
    settings = Settings(data_dir=tmp_path / "data", tick_seconds=0, seed=5, rate_limit=False)
    first = Api(await aiohttp_client(create_app(settings)))
    await patch(first, keys, "prv_stp_mx", {"declineRate": 0.5, "seed": 3})
    await incident(first, keys, "prv_cardhub", {"behaviour": "outage", "durationSeconds": 600})
    for _ in range(4):
        await first.post("/payments", keys.live_sk, json={"amount": 50, "paymentMethodId": "1001"})
    _, before, _ = await first.get("/_sim/providers", keys.sandbox_sk)
    assert next(p for p in before["data"] if p["id"] == "prv_stp_mx")["counts"]["charges"] == 4
    await first.client.close()

    second = Api(await aiohttp_client(create_app(settings)))
    _, after, _ = await second.get("/_sim/providers", keys.sandbox_sk)
    assert after == before


async def test_counts_kept_in_memory_are_in_a_saved_state(api: Api, keys: Keys) -> None:
    """Counts are written lazily (not with every charge): a saved state still holds them."""

    async def stp_counts() -> dict[str, int]:
        _, body, _ = await api.get("/_sim/providers/prv_stp_mx", keys.sandbox_sk)
        return body["counts"]

    for _ in range(3):
        await api.post("/payments", keys.live_sk, json={"amount": 50, "paymentMethodId": "1001"})
    saved = await stp_counts()
    assert saved["charges"] == 3
    status, _, _ = await api.post("/_sim/state", keys.sandbox_sk, json={"name": "three"})
    assert status == 201
    await api.post("/payments", keys.live_sk, json={"amount": 50, "paymentMethodId": "1001"})
    assert (await stp_counts())["charges"] == 4
    status, _, _ = await api.post("/_sim/state/three/restore", keys.sandbox_sk)
    assert status == 200
    assert await stp_counts() == saved


def test_the_document_enumerates_the_domains_values() -> None:
    schemas = document()["components"]["schemas"]
    assert schemas["SimProviderBehaviour"]["enum"] == list(
        dict.fromkeys(PAYIN_BEHAVIOURS + PAYOUT_BEHAVIOURS)
    )
    reasons = [*PAYIN_DECLINE_REASONS, *PAYOUT_REJECT_REASONS]
    assert schemas["SimDeclineReason"]["enum"] == reasons
    update = schemas["SimProviderUpdate"]["properties"]
    assert update["declineReason"]["enum"] == [*reasons, None]
    assert update["behaviour"]["enum"] == [*schemas["SimProviderBehaviour"]["enum"], None]
    assert schemas["SimIncidentRequest"]["properties"]["declineReason"]["enum"] == [
        *reasons,
        None,
    ]
    assert schemas["SimProviderCounts"]["required"] == list(COUNTS)


async def test_the_servers_reset_resets_the_provider_world(api: Api, keys: Keys) -> None:
    _, before, _ = await api.get("/_sim/providers", keys.sandbox_sk)
    await patch(api, keys, "prv_stp_mx", {"behaviour": "outage"})
    await incident(api, keys, "prv_cardhub", {"behaviour": "outage", "durationSeconds": 600})
    status, body, _ = await api.post("/_sim/reset", keys.sandbox_sk)
    assert status == 200, body
    _, after, _ = await api.get("/_sim/providers", keys.sandbox_sk)
    assert after == before


async def test_reset_is_not_a_provider_id(api: Api, keys: Keys) -> None:
    status, body, _ = await api.call("OPTIONS", "/_sim/providers/reset", keys.sandbox_sk)
    error = assert_error(status, body, 405, "method_not_allowed")
    assert error["details"]["allowed"] == ["POST"], error
    status, body, _ = await api.get("/_sim/providers/prv_stp_mx", keys.sandbox_sk)
    assert status == 200
