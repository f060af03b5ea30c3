"""The hosted checkout pages through the aiohttp test client (fast; tests/browser drives them in
Chromium): the language each request gets, the status endpoint the live update polls, whom the
buyer pays, the steps, sandbox honesty and the static files the pages load.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from simulator.http.keys import CONTEXT
from tests.api.test_checkout import BUYER, CPF, CUSTOMER, RETURN_URL, call, new_session, select
from tests.conftest import Api, Keys

KEYS = Keys()


def lang_of(html: str) -> str:
    match = re.search(r'<html lang="([^"]+)">', html)
    assert match, html[:200]
    return match[1]


async def one_shot_tx(api: Api, method_id: str = "1001", **body: Any) -> str:
    buyer = {**BUYER, "documentId": CPF} if method_id in ("1006", "1007") else BUYER
    status, data, _ = await call(
        api,
        "POST",
        "/checkout/sessions",
        KEYS.sandbox_sk,
        json={"amount": 50, "paymentMethodId": method_id, **buyer, **body},
    )
    assert status == 200, data
    return str(data["sessionId"])


async def page(api: Api, path: str, **headers: str) -> tuple[int, str, Any]:
    status, html, response = await call(api, "GET", path, headers=headers)
    assert isinstance(html, str)
    return status, html, response


# -- which language --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("country", "lang", "heading"),
    [
        ("BR", "pt-BR", "Escolha como pagar"),
        ("MX", "es-MX", "Elige cómo pagar"),
        ("CO", "es-CO", "Elige cómo pagar"),
        ("AR", "es-AR", "Elige cómo pagar"),
        ("CL", "es-CL", "Elige cómo pagar"),
        ("PE", "es-PE", "Elige cómo pagar"),
        ("US", "en-US", "Choose how to pay"),
    ],
)
async def test_the_sessions_country_chooses_the_language(
    api: Api, country: str, lang: str, heading: str
) -> None:
    token = (await new_session(api, country=country))["sessionId"]
    # A browser left in English does not turn a Latin-American checkout into English.
    status, html, response = await page(
        api, f"/checkout/{token}", **{"Accept-Language": "en-US,en;q=0.9"}
    )
    assert status == 200 and lang_of(html) == lang
    assert f"<h1>{heading}</h1>" in html
    assert response.headers["Content-Language"] == lang
    assert "Accept-Language" in response.headers["Vary"]


async def test_lang_forces_a_language_and_the_pages_keep_it(api: Api) -> None:
    token = (await new_session(api, country="MX"))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}?lang=en")
    assert lang_of(html) == "en" and "<h1>Choose how to pay</h1>" in html
    # The choice travels with the forms and redirects.
    assert f'action="/checkout/{token}/select?lang=en"' in html
    status, _, response = await call(
        api,
        "POST",
        f"/checkout/{token}/select?lang=en",
        data={"paymentMethodId": "1001"},
    )
    assert status == 303 and response.headers["Location"].endswith("?lang=en")
    _, html, _ = await page(api, response.headers["Location"])
    assert lang_of(html) == "en" and "Waiting for your payment" in html
    # Without ?lang= the payment page is in the country's language again.
    _, html, _ = await page(api, response.headers["Location"].split("?")[0])
    assert lang_of(html) == "es-MX" and "Esperando tu pago" in html


async def test_the_language_links_switch_the_page(api: Api) -> None:
    token = (await new_session(api, country="BR"))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}")
    for code in ("en", "es", "pt"):
        assert f'id="lang-{code}" href="/checkout/{token}?lang={code}"' in html
    assert re.search(r'id="lang-pt"[^>]*aria-current="true"', html)
    _, html, _ = await page(api, f"/checkout/{token}?lang=es")
    assert lang_of(html) == "es-BR" and "<h1>Elige cómo pagar</h1>" in html


@pytest.mark.parametrize(
    ("accept", "lang"),
    [("pt-BR,pt;q=0.9", "pt-BR"), ("es-CO", "es-CO"), ("fr, es;q=0.5", "es-419"), ("de", "en")],
)
async def test_without_a_country_the_browser_chooses(api: Api, accept: str, lang: str) -> None:
    token = (await new_session(api))["sessionId"]  # no country: the whole grid
    _, html, _ = await page(api, f"/checkout/{token}", **{"Accept-Language": accept})
    assert lang_of(html) == lang


async def test_error_pages_speak_the_browsers_language(api: Api) -> None:
    status, html, _ = await page(api, "/checkout/cs_missing", **{"Accept-Language": "es-MX"})
    assert status == 404 and lang_of(html) == "es-MX"
    assert 'id="error-title">Este enlace de pago no está disponible<' in html


async def test_amounts_and_times_are_the_buyers(api: Api) -> None:
    tx_id = await one_shot_tx(api, "1006")
    tx = api.client.app[CONTEXT].transactions.get(tx_id)
    assert tx is not None
    _, html, _ = await page(api, f"/c/{tx_id}")
    assert lang_of(html) == "pt-BR"
    assert re.search(r'id="amount" data-amount="252.50" data-currency="BRL">R\$\xa0252,50<', html)
    due = re.search(r'<time id="due-date" datetime="([^"]+)">([^<]+)</time>', html)
    assert due and due[1] == tx["paymentData"]["dueDate"]
    assert due[2].endswith("(Horário de Brasília)") and " de " in due[2]
    _, html, _ = await page(api, f"/c/{tx_id}?lang=en")
    assert re.search(r'id="amount" [^>]*>R\$252.50<', html)


# -- the live status -------------------------------------------------------------------------


async def test_status_endpoint_follows_the_payment(api: Api) -> None:
    tx_id = await one_shot_tx(api, "1006")
    status, body, response = await call(api, "GET", f"/c/{tx_id}/status")
    assert status == 200 and response.headers["Cache-Control"] == "no-store"
    assert body == {
        "transactionId": tx_id,
        "status": "pending",
        "statusText": "Aguardando seu pagamento",
        "message": None,
    }
    paid, _, _ = await call(
        api, "POST", f"/payments/{tx_id}/simulate", KEYS.sandbox_sk, json={"action": "paid"}
    )
    assert paid == 200
    _, body, _ = await call(api, "GET", f"/c/{tx_id}/status?lang=en")
    assert body["status"] == "completed" and body["statusText"] == "Payment received"
    assert body["message"] == "Thank you: this payment has been received."


async def test_status_of_an_unknown_payment_is_a_404_envelope(api: Api) -> None:
    status, body, _ = await call(api, "GET", "/c/TXN-NOPE/status")
    assert status == 404 and body["error"]["code"] == "transaction_not_found"


async def test_a_pending_page_updates_itself_with_or_without_javascript(api: Api) -> None:
    tx_id = await one_shot_tx(api)
    _, html, _ = await page(api, f"/c/{tx_id}")
    assert f'data-status="pending" data-status-url="/c/{tx_id}/status?lang=es-MX"' in html
    assert '<noscript><meta http-equiv="refresh" content="10"></noscript>' in html
    await call(
        api, "POST", f"/payments/{tx_id}/simulate", KEYS.sandbox_sk, json={"action": "failed"}
    )
    _, html, _ = await page(api, f"/c/{tx_id}")
    assert 'data-status="failed"' in html and 'http-equiv="refresh"' not in html
    assert 'id="closed-message">Este pago ya no se puede realizar.<' in html


# -- what the pages show ---------------------------------------------------------------------


async def test_instructions_say_whom_the_buyer_pays(api: Api) -> None:
    tx_id = await one_shot_tx(api, "1002", merchantOrderId="A-1042", returnUrl=RETURN_URL)
    _, html, _ = await page(api, f"/c/{tx_id}")
    assert 'id="shop-name">Mercado Azul Tienda en Línea<' in html
    assert 'id="merchant-name">Mercado Azul S.A. de C.V.<' in html
    assert 'id="order">Pedido A-1042<' in html
    # The amount the buyer pays, in their currency, is the headline (no USD beside it).
    assert 'id="amount" data-amount="855.00" data-currency="MXN">$855.00<' in html
    assert "USD" not in html


async def test_the_picker_leads_with_the_local_amount(api: Api) -> None:
    token = (await new_session(api, country="MX", merchantOrderId="A-7"))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}")
    assert 'id="amount" data-amount="855.00" data-currency="MXN">$855.00<' in html
    assert 'id="order-total">Total del pedido: 50.00 USD<' in html
    assert 'id="order">Pedido A-7<' in html
    # A grid of several currencies keeps the merchant's price.
    token = (await new_session(api))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}?lang=en")
    assert 'id="amount" data-amount="50.00" data-currency="USD">$50.00<' in html
    assert 'id="order-total"' not in html


@pytest.mark.parametrize(
    ("method_id", "step"),
    [
        ("1001", "Ingresa la CLABE de arriba como cuenta de destino."),
        ("1002", "dile al cajero que pagarás con OXXO Pay."),
        ("1003", "Acude a un punto de pago de Tiendas de conveniencia"),
        ("1006", "a Payorch Brasil Ltda. y confirma."),  # the payee the bank's app shows
        ("1007", "La confirmación de un boleto puede tardar hasta dos días hábiles."),
    ],
    ids=["spei", "oxxo", "cash", "pix", "boleto"],
)
async def test_each_rail_gives_its_steps(api: Api, method_id: str, step: str) -> None:
    tx_id = await one_shot_tx(api, method_id)
    _, html, _ = await page(api, f"/c/{tx_id}?lang=es")
    steps = re.search(r'<ol class="steps" id="steps">(.*?)</ol>', html, re.S)
    assert steps and step in steps[1]


@pytest.mark.parametrize(
    ("method_id", "targets"),
    [("1001", ["clabe", "reference"]), ("1006", ["pix-code"]), ("1002", ["barcode"])],
)
async def test_copy_buttons_wait_for_the_script(
    api: Api, method_id: str, targets: list[str]
) -> None:
    tx_id = await one_shot_tx(api, method_id)
    _, html, _ = await page(api, f"/c/{tx_id}?lang=en")
    buttons = re.findall(r'<button type="button" class="copy" id="copy-([a-z-]+)"[^>]*>', html)
    assert buttons == targets
    # Hidden until the script shows them: without it the codes are plain selectable text.
    assert all(" hidden>" in b for b in re.findall(r"<button[^>]*data-copy=[^>]*>", html))


async def test_sandbox_methods_wear_a_test_badge_and_the_footer_says_where(api: Api) -> None:
    token = (await new_session(api, country="BR"))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}?lang=en")
    assert re.search(r'<span class="badge" id="test-badge-sbx_pix"[^>]*>Test</span>', html)
    assert html.count('class="badge"') == 1
    assert 'id="environment" data-environment="sandbox">Sandbox: a test payment' in html
    live = (await new_session(api, KEYS.live_sk, country="BR"))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{live}?lang=en")
    assert 'class="badge"' not in html
    assert 'data-environment="production">Production mode' in html


async def test_the_english_texts_of_the_fixtures_are_translated_on_the_pages(api: Api) -> None:
    # The sandbox built-ins' names and labels are English in the catalogue (and the API)...
    token = (await new_session(api, country="MX"))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}")
    assert 'aria-label="Pagar con Efectivo (sandbox)"' in html
    assert '<span class="method-label">Método de prueba de pago en efectivo OXXO</span>' in html
    _, html, _ = await page(api, f"/checkout/{token}?lang=en")
    assert '<span class="method-label">OXXO cash test method</span>' in html
    # ...and so is the help of the fields a rail asks for (their labels are already local).
    brazil = (await new_session(api, country="BR"))["sessionId"]
    status, html, _ = await call(
        api, "POST", f"/checkout/{brazil}/select", data={"paymentMethodId": "1006"}
    )
    assert status == 422 and "CPF (Cadastro de Pessoas Físicas), 11 dígitos" in html
    assert "Brazilian" not in html


async def test_the_provider_page_is_translated(api: Api) -> None:
    token = (await new_session(api, country="MX", customer={**CUSTOMER}, merchantOrderId="A-9"))[
        "sessionId"
    ]
    status, data, _ = await select(api, token, "1004")
    assert status == 200, data
    _, html, _ = await page(api, f"/_sim/provider/{data['transactionId']}")
    assert lang_of(html) == "es-MX"
    assert 'id="approve" type="submit">Aprobar<' in html
    # Whom the buyer pays, as on the payment page: the shop and the order.
    assert 'id="shop-name">Mercado Azul Tienda en Línea<' in html
    assert 'id="order">Pedido A-9<' in html
    _, html, _ = await page(api, f"/_sim/provider/{data['transactionId']}?lang=pt")
    assert 'action="/_sim/provider/' in html and '/approve?lang=pt-BR"' in html


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/static/favicon.svg", "image/svg+xml"),
        ("/static/checkout.css", "text/css"),
        ("/static/checkout.js", "javascript"),  # text/ or application/, by the platform's table
    ],
)
async def test_the_files_every_page_loads_are_served(
    api: Api, path: str, content_type: str
) -> None:
    token = (await new_session(api))["sessionId"]
    _, html, _ = await page(api, f"/checkout/{token}")
    assert f'"{path}"' in html
    response = await api.client.get(path)
    assert response.status == 200 and response.content_type.endswith(content_type)


async def test_favicon_ico_is_the_pages_icon_and_the_landing_page_links_it(api: Api) -> None:
    # Browsers ask for /favicon.ico where a document links no icon (JSON opened in a tab).
    response = await api.client.get("/favicon.ico")
    assert response.status == 200 and response.content_type == "image/svg+xml"
    svg = await api.client.get("/static/favicon.svg")
    assert await response.read() == await svg.read()
    response = await api.client.get("/", headers={"Accept": "text/html"})
    html = await response.text()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    assert "img-src 'self'" in response.headers["Content-Security-Policy"]
