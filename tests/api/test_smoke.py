from tests.conftest import Api, Keys, assert_error


async def test_ping_and_a_payment(api: Api, keys: Keys) -> None:
    status, body, response = await api.get("/ping", keys.sandbox_sk)
    assert status == 200 and body["environment"] == "sandbox"
    assert response.headers["X-Request-Id"].startswith("req_")
    tx = await api.pay()
    assert tx["status"] == "pending" and tx["paymentData"]["clabe"]
    status, body, _ = await api.get("/nope", keys.sandbox_sk)
    assert_error(status, body, 404, "route_not_found")
