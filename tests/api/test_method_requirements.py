"""GET /_sim/payment-methods: what each method of the shop's listing needs (flow, buyer fields,
deadline), for `payorch methods`; the control plane's rules (sandbox secret credentials)."""

from __future__ import annotations

from tests.conftest import KEYS, Api, assert_error


async def test_one_item_per_listed_method_with_its_buyer_fields(api: Api) -> None:
    status, listing, _ = await api.get("/payment-methods", KEYS.sandbox_sk)
    assert status == 200
    status, body, _ = await api.get("/_sim/payment-methods", KEYS.sandbox_sk)
    assert status == 200
    items = {item["paymentMethodId"]: item for item in body["data"]}
    assert list(items) == [m["paymentMethodId"] for m in listing["methods"]]
    boleto = items["1007"]
    assert boleto["flow"] == "direct" and boleto["dueHours"] > 0
    assert [f["key"] for f in boleto["requiredFields"]] == ["userName", "documentId"]
    assert all(set(f) == {"key", "type", "label", "help"} for f in boleto["requiredFields"])
    assert items["1001"]["requiredFields"] == []
    assert {item["flow"] for item in items.values()} == {"direct", "hosted"}


async def test_the_control_planes_credential_rules(api: Api) -> None:
    status, body, _ = await api.get("/_sim/payment-methods", KEYS.live_sk)
    assert_error(status, body, 400, "production_key_refused")
    status, body, _ = await api.get("/_sim/payment-methods", None)
    assert_error(status, body, 401, "missing_credentials")
