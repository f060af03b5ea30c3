"""Ending a provider's incidents early (issue 15 follow-up): `DELETE
/_sim/providers/{id}/incidents/{incidentId}` ends one, `DELETE /_sim/providers/{id}/incidents`
all of them; an active one ends at the clock's now, a scheduled one never starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulator.app import create_app
from simulator.settings import Settings
from tests.conftest import Api, Keys, assert_error

SPEI = {"amount": 50, "paymentMethodId": "1001"}  # MX, one provider: prv_stp_mx


async def outage(api: Api, keys: Keys, provider: str = "prv_stp_mx", **extra: Any) -> Any:
    status, made, _ = await api.post(
        f"/_sim/providers/{provider}/incidents",
        keys.sandbox_sk,
        json={"behaviour": "outage", "durationSeconds": 600, **extra},
    )
    assert status == 201, made
    return made


async def end(api: Api, keys: Keys, path: str) -> tuple[int, Any]:
    status, out, _ = await api.call("DELETE", path, keys.sandbox_sk)
    return status, out


async def provider(api: Api, keys: Keys, provider_id: str = "prv_stp_mx") -> Any:
    status, out, _ = await api.get(f"/_sim/providers/{provider_id}", keys.sandbox_sk)
    assert status == 200, out
    return out


async def test_ending_an_active_outage_lets_the_next_charge_through_at_once(
    api: Api, keys: Keys
) -> None:
    made = await outage(api, keys)
    status, out, _ = await api.post("/payments", keys.live_sk, json=SPEI)
    assert_error(status, out, 422, "cascade_exhausted")
    clock = await api.advance(120)
    status, ended = await end(api, keys, f"/_sim/providers/prv_stp_mx/incidents/{made['id']}")
    assert status == 200, ended
    assert ended == {**made, "endsAt": ended["endsAt"], "active": False, "ended": "early"}
    # It ended now (the clock runs in real time too), not at its scheduled end, 8 minutes on.
    assert clock["now"] <= ended["endsAt"] < made["endsAt"]
    status, out, _ = await api.post("/payments", keys.live_sk, json=SPEI)
    assert status == 200, out
    after = await provider(api, keys)
    assert after["effectiveBehaviour"] == "accept" and after["incidents"] == []
    assert after["counts"]["unavailable"] == 1 and after["counts"]["accepted"] == 1


async def test_ending_a_scheduled_incident_means_it_never_starts(api: Api, keys: Keys) -> None:
    made = await outage(api, keys, startsInSeconds=60)
    status, ended = await end(api, keys, f"/_sim/providers/prv_stp_mx/incidents/{made['id']}")
    assert status == 200, ended
    assert ended == {**made, "ended": "cancelled"}  # as scheduled: it never started
    await api.advance(90)
    status, out, _ = await api.post("/payments", keys.live_sk, json=SPEI)
    assert status == 200, out
    assert (await provider(api, keys))["incidents"] == []


async def test_ending_one_leaves_the_others(api: Api, keys: Keys) -> None:
    first = await outage(api, keys)
    second = await outage(api, keys, startsInSeconds=3600)
    status, _ = await end(api, keys, f"/_sim/providers/prv_stp_mx/incidents/{first['id']}")
    assert status == 200
    assert (await provider(api, keys))["incidents"] == [second]


async def test_ending_all_of_a_providers_incidents(api: Api, keys: Keys) -> None:
    active = await outage(api, keys)
    scheduled = await outage(api, keys, startsInSeconds=3600)
    other = await outage(api, keys, "prv_cardhub")
    status, body = await end(api, keys, "/_sim/providers/prv_stp_mx/incidents")
    assert status == 200, body
    assert [(i["id"], i["ended"]) for i in body["data"]] == [
        (active["id"], "early"),
        (scheduled["id"], "cancelled"),
    ]
    assert (await provider(api, keys))["incidents"] == []
    assert (await provider(api, keys, "prv_cardhub"))["incidents"] == [other]  # untouched
    status, out, _ = await api.post("/payments", keys.live_sk, json=SPEI)
    assert status == 200, out
    # Nothing left to end: no error, nothing ended (a retry is harmless).
    assert await end(api, keys, "/_sim/providers/prv_stp_mx/incidents") == (200, {"data": []})


async def test_an_unknown_or_already_over_incident_is_404_naming_the_param(
    api: Api, keys: Keys
) -> None:
    made = await outage(api, keys)
    ended_early = f"/_sim/providers/prv_stp_mx/incidents/{made['id']}"
    assert (await end(api, keys, ended_early))[0] == 200
    over = await outage(api, keys, durationSeconds=60)
    await api.advance(61)
    for path in (
        "/_sim/providers/prv_stp_mx/incidents/inc_nope",
        ended_early,  # ended by the first DELETE
        f"/_sim/providers/prv_stp_mx/incidents/{over['id']}",  # over by the clock
        f"/_sim/providers/prv_cardhub/incidents/{made['id']}",  # another provider's
    ):
        status, out = await end(api, keys, path)
        error = assert_error(status, out, 404, "incident_not_found")
        assert error["param"] == "incidentId", error
        assert error["details"]["incidentId"] == path.rsplit("/", 1)[-1]


async def test_an_unknown_provider_is_404_and_the_sandbox_provider_is_refused(
    api: Api, keys: Keys
) -> None:
    for path in (
        "/_sim/providers/prv_nowhere/incidents",
        "/_sim/providers/prv_nowhere/incidents/inc_x",
    ):
        status, out = await end(api, keys, path)
        assert assert_error(status, out, 404, "provider_not_found")["param"] == "id"
    for path in (
        "/_sim/providers/prv_sandbox/incidents",
        "/_sim/providers/prv_sandbox/incidents/inc_x",
    ):
        status, out = await end(api, keys, path)
        error = assert_error(status, out, 400, "invalid_request")
        assert "sandbox cascade always accepts" in error["message"]
    status, out, _ = await api.call("DELETE", "/_sim/providers/prv_stp_mx/incidents", keys.live_sk)
    assert_error(status, out, 400, "production_key_refused")


async def test_the_api_alias_ends_incidents_too(api: Api, keys: Keys) -> None:
    made = await outage(api, keys)
    response = await api.client.delete(
        f"/api/v1/_sim/providers/prv_stp_mx/incidents/{made['id']}",
        headers={"Authorization": f"Bearer {keys.sandbox_sk}"},
    )
    assert response.status == 200 and (await response.json())["ended"] == "early"


async def test_an_ended_incident_stays_ended_across_a_restart(
    aiohttp_client: Any, tmp_path: Path, keys: Keys
) -> None:
    settings = Settings(data_dir=tmp_path / "data", tick_seconds=0, seed=5, rate_limit=False)
    first = Api(await aiohttp_client(create_app(settings)))
    made = await outage(first, keys)
    kept = await outage(first, keys, "prv_cardhub")
    status, _ = await end(first, keys, f"/_sim/providers/prv_stp_mx/incidents/{made['id']}")
    assert status == 200
    _, before, _ = await first.get("/_sim/providers", keys.sandbox_sk)
    await first.client.close()

    second = Api(await aiohttp_client(create_app(settings)))
    _, after, _ = await second.get("/_sim/providers", keys.sandbox_sk)
    assert after == before
    by_id = {p["id"]: p for p in after["data"]}
    assert by_id["prv_stp_mx"]["incidents"] == [] and by_id["prv_cardhub"]["incidents"] == [kept]
    status, out, _ = await second.post("/payments", keys.live_sk, json=SPEI)
    assert status == 200, out
