"""A production payment is approvable only through the tokened link its own answer gave (issue 23,
item 2). `/c/<id>` is public by id (the buyer sees it, receipts show it): followed by anyone, its
redirects must never end on the provider page that approves the payment. The checkout answers
(one-shot `checkoutUrl`, the select's `checkoutUrl`) and the pages' redirects after the buyer
proved the session's token carry `/c/<id>.<token>`, which leads on to `paymentFormUrl`.

Headless-free: aiohttp's client follows each redirect chain as a browser would."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from aiohttp import ClientResponse

from tests.conftest import KEYS, Api

CARD_FORM = "1025"  # a hosted card form (prv_cardhub)
BUYER = {
    "firstName": "Ana",
    "lastName": "Souza",
    "email": "ana@example.org",
    "phone": "+5511987654321",
    "documentId": "123456789",
}


async def v1(api: Api, method: str, path: str, key: str | None = None, **kw: Any) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = await api.client.request(method, "/api/v1" + path, headers=headers, **kw)
    body = await response.json(content_type=None)
    assert response.status == 200, body
    return body


async def follow(api: Api, method: str, path: str, **kw: Any) -> tuple[ClientResponse, str]:
    """Every redirect followed, as a browser would; the last answer and its page."""
    response = await api.client.request(method, path, allow_redirects=True, **kw)
    return response, await response.text()


def chain(response: ClientResponse) -> list[str]:
    return [r.url.path for r in response.history] + [response.url.path]


async def status_of(api: Api, tx_id: str) -> str:
    return str((await v1(api, "GET", f"/payments/{tx_id}", KEYS.live_sk))["status"])


async def test_a_one_shot_production_payment_is_approvable_only_by_its_answers_link(
    api: Api,
) -> None:
    answer = await v1(
        api,
        "POST",
        "/checkout/sessions",
        KEYS.live_sk,
        json={"amount": 50, "paymentMethodId": CARD_FORM, "customer": BUYER},
    )
    tx_id = answer["sessionId"]
    payment = await v1(api, "GET", f"/payments/{tx_id}", KEYS.live_sk)
    form = urlsplit(payment["paymentFormUrl"]).path
    token = form.rsplit(".", 1)[1]
    assert urlsplit(answer["checkoutUrl"]).path == f"/c/{tx_id}.{token}"

    # Anyone with the id: the chain ends on the status page, no provider page, no way to it.
    response, html = await follow(api, "GET", f"/c/{tx_id}")
    assert response.status == 200 and chain(response) == [f"/c/{tx_id}"]
    assert "/_sim/provider/" not in html and 'id="approve"' not in html
    wrong = f"{tx_id}.{'A' * len(token)}"
    for path in (
        f"/c/{wrong}",
        f"/c/{tx_id}.",
        f"/_sim/provider/{tx_id}",
        f"/_sim/provider/{wrong}",
    ):
        response, _ = await follow(api, "GET", path)
        assert response.status == 404, path
    for ref in (tx_id, wrong):
        response, _ = await follow(api, "POST", f"/_sim/provider/{ref}/approve")
        assert response.status == 404, ref
    assert await status_of(api, tx_id) == "pending"

    # The answer's link: on to the provider page, which approves.
    response, html = await follow(api, "GET", urlsplit(answer["checkoutUrl"]).path)
    assert chain(response) == [f"/c/{tx_id}.{token}", form] and 'id="approve"' in html
    response, _ = await follow(api, "POST", f"{form}/approve")
    assert response.status == 200
    assert await status_of(api, tx_id) == "completed"


async def test_a_selector_sessions_buyer_goes_on_by_the_tokened_link(api: Api) -> None:
    session = await v1(
        api, "POST", "/checkout/sessions", KEYS.live_sk, json={"amount": 50, "customer": BUYER}
    )
    token = session["sessionId"]
    # The buyer picks a card form on the picker page: on to the provider page.
    response, html = await follow(
        api, "POST", f"/checkout/{token}/select", data={"paymentMethodId": CARD_FORM}
    )
    assert 'id="approve"' in html, html[:500]
    tx_id = urlsplit(str(response.url)).path.split("/")[-1].partition(".")[0]
    tx_path = chain(response)[1]
    assert tx_path.startswith(f"/c/{tx_id}.") and len(tx_path) > len(f"/c/{tx_id}.") + 30
    # A revisit of the session (its token proven) goes the same way; the bare id does not.
    response, html = await follow(api, "GET", f"/checkout/{token}")
    assert chain(response)[1] == tx_path and 'id="approve"' in html
    response, html = await follow(api, "GET", f"/c/{tx_id}")
    assert chain(response) == [f"/c/{tx_id}"] and "/_sim/provider/" not in html
    # The API's select answers the tokened link too.
    again = await v1(api, "GET", f"/checkout/sessions/{token}")
    assert again["completedTxId"] == tx_id


async def test_the_select_apis_answer_carries_the_tokened_link(api: Api) -> None:
    session = await v1(
        api, "POST", "/checkout/sessions", KEYS.live_sk, json={"amount": 50, "customer": BUYER}
    )
    selected = await v1(
        api,
        "POST",
        f"/checkout/sessions/{session['sessionId']}/select",
        json={"paymentMethodId": CARD_FORM},
    )
    path = urlsplit(selected["checkoutUrl"]).path
    assert path.startswith(f"/c/{selected['transactionId']}.")
    response, html = await follow(api, "GET", path)
    assert 'id="approve"' in html and chain(response)[-1].startswith("/_sim/provider/")


async def test_sandbox_keeps_the_id_links(api: Api) -> None:
    answer = await v1(
        api,
        "POST",
        "/checkout/sessions",
        KEYS.sandbox_sk,
        json={"amount": 50, "paymentMethodId": CARD_FORM, "customer": BUYER},
    )
    tx_id = answer["sessionId"]
    assert urlsplit(answer["checkoutUrl"]).path == f"/c/{tx_id}"
    response, html = await follow(api, "GET", f"/c/{tx_id}")
    assert chain(response) == [f"/c/{tx_id}", f"/_sim/provider/{tx_id}"]
    assert 'id="approve"' in html
