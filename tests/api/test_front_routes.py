"""The front's own path for `default`'s requests (simulator/http/front.py): the route the router
found for a plain path is reused, and every request still gets the router's answer."""

from __future__ import annotations

from tests.conftest import KEYS, Api, assert_error


async def test_a_plain_route_is_found_once_and_answers_as_the_router_does(api: Api) -> None:
    front = api.client.app
    assert front is not None
    paid = [await api.pay() for _ in range(2)]
    for payment in paid:  # a path with a variable: the router's, every time
        status, body, _ = await api.get(f"/payments/{payment['transactionId']}", KEYS.sandbox_sk)
        assert status == 200 and body["id"] == payment["transactionId"]
    status, body, _ = await api.call("DELETE", "/payments", KEYS.sandbox_sk)
    assert_error(status, body, 405, "method_not_allowed")
    status, body, _ = await api.get("/nowhere", KEYS.sandbox_sk)
    assert_error(status, body, 404, "route_not_found")
    status, body, _ = await api.get("/payments", KEYS.sandbox_sk)
    assert status == 200 and body["pagination"]["total"] == 2
    kept = front._plain_routes  # type: ignore[attr-defined]  # the front's own table
    assert set(kept) == {("POST", "/api/v1/payments"), ("GET", "/api/v1/payments")}
    assert all(route.resource.canonical == "/api/v1/payments" for route in kept.values())
