"""The simulated provider's page of a production payment is reached by its own unguessable link.

A transaction id is not a secret: the buyer sees it on `/c/<id>`, in receipts, and the merchant
in webhooks. Approving on the provider page settles the payment, so in production the page is
`/_sim/provider/<id>.<token>` (`paymentFormUrl` points at it; the token is stored on the
transaction, drawn from the app's generator: the OS's CSPRNG unless the server is seeded), and the
bare id opens nothing. Sandbox keeps the id form.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from simulator.http.keys import STORE
from tests.conftest import KEYS, Api

HOSTED = {"amount": 50, "paymentMethodId": "1025"}  # a card form (flow: hosted) on prv_cardhub
LINK = re.compile(r"^/_sim/provider/(TXN-[A-Za-z0-9]+)\.([A-Za-z0-9_-]{32,})$")


async def page_call(api: Api, method: str, path: str) -> tuple[int, str, Any]:
    response = await api.client.request(method, path, allow_redirects=False)
    return response.status, await response.text(), response


async def create(api: Api, key: str, **body: Any) -> dict[str, Any]:
    status, tx, _ = await api.post("/payments", key, json={**HOSTED, **body})
    assert status == 200, tx
    return tx


async def status_of(api: Api, tx_id: str, key: str) -> str:
    _, tx, _ = await api.get(f"/payments/{tx_id}", key)
    return str(tx["status"])


async def test_a_production_payment_form_has_its_own_link(api: Api) -> None:
    tx = await create(api, KEYS.live_sk)
    path = urlsplit(tx["paymentFormUrl"]).path
    match = LINK.fullmatch(path)
    assert match is not None, path
    assert match.group(1) == tx["transactionId"]
    # Each payment its own token, never derived from the id.
    other = urlsplit((await create(api, KEYS.live_sk))["paymentFormUrl"]).path
    assert LINK.fullmatch(other) and other.rsplit(".", 1)[1] != match.group(2)
    status, html, _ = await page_call(api, "GET", path)
    assert status == 200 and 'id="approve"' in html
    assert f'action="{path}/approve"' in html  # the buttons keep the token


async def test_the_bare_id_or_a_wrong_token_opens_nothing_in_production(api: Api) -> None:
    tx = await create(api, KEYS.live_sk)
    tx_id = tx["transactionId"]
    token = urlsplit(tx["paymentFormUrl"]).path.rsplit(".", 1)[1]
    wrong = ("A" if token[0] != "A" else "B") + token[1:]
    for ref in (tx_id, f"{tx_id}.{wrong}", f"{tx_id}.", f"{tx_id}.{token}x"):
        status, html, _ = await page_call(api, "GET", f"/_sim/provider/{ref}")
        assert status == 404 and 'id="approve"' not in html, ref
        status, _, _ = await page_call(api, "POST", f"/_sim/provider/{ref}/approve")
        assert status == 404, ref
    assert await status_of(api, tx_id, KEYS.live_sk) == "pending"


async def test_the_link_settles_the_payment_and_the_buttons_come_back_to_it(api: Api) -> None:
    tx = await create(api, KEYS.live_sk)
    path = urlsplit(tx["paymentFormUrl"]).path
    status, _, response = await page_call(api, "POST", f"{path}/approve")
    assert status == 303 and response.headers["Location"] == path
    assert await status_of(api, tx["transactionId"], KEYS.live_sk) == "completed"


async def test_the_transaction_page_leads_to_the_link_only_with_its_token(
    api: Api,
) -> None:
    """`/c/<id>` is public by id: in production it shows a checkout payment's status only; the
    tokened `checkoutUrl` its answer gave (`/c/<id>.<token>`) redirects to the provider page."""
    direct = await create(api, KEYS.live_sk)
    status, _, response = await page_call(api, "GET", f"/c/{direct['transactionId']}")
    assert status == 404 and "Location" not in response.headers
    hosted = await create(
        api, KEYS.live_sk, hostedCheckout=True, userName="Ana Souza",
        userEmail="ana@example.org", documentId="123456789",
    )  # fmt: skip
    tx_id, form = hosted["transactionId"], urlsplit(hosted["paymentFormUrl"]).path
    status, html, response = await page_call(api, "GET", f"/c/{tx_id}")
    assert status == 200 and "Location" not in response.headers
    assert form not in html and "/_sim/provider/" not in html
    assert "open the payment link the shop gave you" in html
    checkout = urlsplit(hosted["checkoutUrl"]).path
    assert checkout == f"/c/{tx_id}.{form.rsplit('.', 1)[1]}"
    status, _, response = await page_call(api, "GET", checkout)
    assert status == 307
    assert response.headers["Location"] == hosted["paymentFormUrl"]


async def test_sandbox_keeps_the_id_form(api: Api) -> None:
    tx = await create(api, KEYS.sandbox_sk)
    assert urlsplit(tx["paymentFormUrl"]).path == f"/_sim/provider/{tx['transactionId']}"
    assert "providerToken" not in api.client.server.app[STORE].table("transactions").get(
        tx["transactionId"]
    )
    status, _, _ = await page_call(api, "POST", f"/_sim/provider/{tx['transactionId']}/approve")
    assert status == 303
    assert await status_of(api, tx["transactionId"], KEYS.sandbox_sk) == "completed"
