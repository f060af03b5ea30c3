"""What a buyer (and an integrator's e2e suite) meets on the checkout pages beyond the ids: their
language, a status that changes by itself, copy buttons, a voucher that prints on one page, and
every page working with JavaScript turned off.

Languages checked: Portuguese (pt-BR, a Brazilian PIX session), Spanish (es-MX, a Mexican
session; es-CO, es-AR, es-CL, es-PE by their sessions' countries, with their currencies and time
zones), English (`?lang=en`, and a session without a country for an English browser), and the
browser's language for a session without a country.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import CPF, CUSTOMER, RETURN_URL, RFC, OpenPage, Server

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect
pytestmark = pytest.mark.browser

BUYER = {"userName": "Ana Souza", "userEmail": "ana@example.com"}
LIVE_UPDATE_SECONDS = 2.0
NO_SCRIPT_REFRESH_SECONDS = 10  # html.NO_SCRIPT_REFRESH_SECONDS


def one_shot(server: Server, method_id: str, **body: Any) -> dict[str, Any]:
    document = CPF if method_id in ("1006", "1007") else RFC
    return server.create_session(
        paymentMethodId=method_id,
        documentId=document,
        returnUrl=RETURN_URL,
        merchantOrderId="A-1042",
        **BUYER,
        **body,
    )


def tx_of(page: Page) -> str:
    match = re.search(r"/c/(TXN-[A-Z0-9]+)", page.url)
    assert match, page.url
    return match.group(1)


def pdf_pages(pdf: bytes) -> int:
    """Pages of a PDF Chromium wrote: its page objects (`/Type /Page`, not `/Pages`)."""
    return len(re.findall(rb"/Type\s*/Page(?![s])", pdf))


# -- languages -------------------------------------------------------------------------------


def test_a_brazilian_pix_session_is_in_portuguese(server: Server, open_page: OpenPage) -> None:
    session = server.create_session(country="BR", customer={**CUSTOMER, "documentId": CPF})
    page = open_page("phone")  # the browser itself asks for en-US
    page.goto(session["checkoutUrl"])
    expect(page.locator("html")).to_have_attribute("lang", "pt-BR")
    expect(page.locator("h1")).to_have_text("Escolha como pagar")
    expect(page.locator("#amount")).to_have_text("R$ 252,50")
    expect(page.locator("#test-badge-sbx_pix")).to_have_text("Teste")
    expect(page.locator("#environment")).to_contain_text("Sandbox: pagamento de teste")
    page.click("#method-1006")
    page.wait_for_url(re.compile(r"/c/TXN-"))
    expect(page.locator("#status")).to_have_text("Aguardando seu pagamento")
    expect(page.locator("#due-date")).to_contain_text("(Horário de Brasília)")
    expect(page.locator("#steps li").first).to_have_text("Abra o app do seu banco e escolha Pix.")


def test_a_mexican_session_is_in_spanish_and_lang_forces_english(
    server: Server, open_page: OpenPage
) -> None:
    session = server.create_session(country="MX", customer=CUSTOMER, returnUrl=RETURN_URL)
    page = open_page("desktop")
    page.goto(session["checkoutUrl"])
    expect(page.locator("html")).to_have_attribute("lang", "es-MX")
    expect(page.locator("h1")).to_have_text("Elige cómo pagar")
    expect(page.locator("#expires-at")).to_contain_text("(hora central)")
    expect(page.locator("#cancel")).to_have_text("Cancelar y volver a la tienda")

    page.goto(session["checkoutUrl"] + "?lang=en")
    expect(page.locator("html")).to_have_attribute("lang", "en-US")  # the browser's region
    expect(page.locator("h1")).to_have_text("Choose how to pay")
    page.click("#method-1001")
    page.wait_for_url(re.compile(r"/c/TXN-[A-Z0-9]+\?lang=en-US$"))
    expect(page.locator("#status")).to_have_text("Waiting for your payment")
    expect(page.locator("h2")).to_have_text("Pay by SPEI bank transfer")
    # The language links go back to Spanish.
    page.click("#lang-es")
    expect(page.locator("#status")).to_have_text("Esperando tu pago")


@pytest.mark.parametrize(
    ("country", "lang", "amount", "currency", "zone"),
    [
        ("CO", "es-CO", "$197.500,00", "COP", "(hora de Colombia)"),
        ("AR", "es-AR", "$51.025,00", "ARS", "(hora de Argentina)"),
        ("CL", "es-CL", "$46.750", "CLP", "(hora de Chile)"),
        ("PE", "es-PE", "S/ 186.00", "PEN", "(hora de Perú)"),
    ],
)
def test_each_spanish_speaking_country_gets_its_locale(
    server: Server,
    open_page: OpenPage,
    country: str,
    lang: str,
    amount: str,
    currency: str,
    zone: str,
) -> None:
    # Mexico and Brazil are above; the browser asks for en-US in each.
    session = server.create_session(country=country, customer=CUSTOMER, merchantOrderId="A-1042")
    page = open_page("phone")
    page.goto(session["checkoutUrl"])
    expect(page.locator("html")).to_have_attribute("lang", lang)
    expect(page.locator("h1")).to_have_text("Elige cómo pagar")
    expect(page.locator("#amount")).to_have_text(amount)  # the country's currency, its format
    expect(page.locator("#currency")).to_have_text(currency)
    expect(page.locator("#order")).to_have_text("Pedido A-1042")
    expect(page.locator("#expires-at")).to_contain_text(zone)  # the country's time zone


def test_without_a_country_the_browsers_language_is_used(
    server: Server, open_page: OpenPage
) -> None:
    session = server.create_session(customer=CUSTOMER)
    page = open_page("phone", locale="pt-BR")
    page.goto(session["checkoutUrl"])
    expect(page.locator("html")).to_have_attribute("lang", "pt-BR")
    expect(page.locator("h1")).to_have_text("Escolha como pagar")
    page = open_page("phone", locale="es-AR")
    page.goto(session["checkoutUrl"])
    expect(page.locator("html")).to_have_attribute("lang", "es-AR")
    expect(page.locator("h1")).to_have_text("Elige cómo pagar")
    page = open_page("phone", locale="en-US")
    page.goto(session["checkoutUrl"])
    expect(page.locator("h1")).to_have_text("Choose how to pay")


# -- the live status -------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["paid", "expired"])
def test_the_status_changes_by_itself_when_the_payment_completes(
    server: Server, open_page: OpenPage, outcome: str
) -> None:
    session = one_shot(server, "1006")
    page = open_page("phone")
    page.goto(session["checkoutUrl"])
    expect(page.locator("#status")).to_have_text("Aguardando seu pagamento")
    page.evaluate("window.sameDocument = true")  # gone if the page reloads

    server.simulate(session["sessionId"], outcome)
    began = time.monotonic()
    text = "Pagamento recebido" if outcome == "paid" else "Pagamento expirado"
    expect(page.locator("#status")).to_have_text(text, timeout=LIVE_UPDATE_SECONDS * 1000)
    assert time.monotonic() - began <= LIVE_UPDATE_SECONDS
    assert page.evaluate("window.sameDocument") is True, "the page reloaded"
    status = "completed" if outcome == "paid" else "expired"
    expect(page.locator("#instructions")).to_have_attribute("data-status", status)
    expect(page.locator(f"#status.status-{status}")).to_be_visible()
    expect(page.locator("#closed-message")).to_be_visible()
    expect(page.locator("#payment-details")).to_have_count(0)  # the QR code is gone


# -- copy buttons ----------------------------------------------------------------------------


def test_copy_buttons_put_the_exact_codes_on_the_clipboard(
    server: Server, open_page: OpenPage
) -> None:
    session = one_shot(server, "1001")
    data = server.payment(session["sessionId"])["paymentData"]
    page = open_page("phone", permissions=["clipboard-read", "clipboard-write"])
    page.goto(session["checkoutUrl"])
    for target, value in (("clabe", data["clabe"]), ("reference", data["reference"])):
        button = page.locator(f"#copy-{target}")
        expect(button).to_be_visible()
        expect(button).to_have_text("Copiar")
        button.click()
        expect(button).to_have_text("Copiado")
        assert page.evaluate("navigator.clipboard.readText()") == value

    pix = one_shot(server, "1006")
    code = server.payment(pix["sessionId"])["paymentData"]["qrCode"]
    page.goto(pix["checkoutUrl"])
    page.click("#copy-pix-code")
    expect(page.locator("#copy-pix-code")).to_have_text("Copiado")
    assert page.evaluate("navigator.clipboard.readText()") == code


# -- vouchers --------------------------------------------------------------------------------


@pytest.mark.parametrize("method_id", ["1002", "1007"], ids=["oxxo", "boleto"])
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_a_voucher_prints_on_one_page(
    server: Server, open_page: OpenPage, method_id: str, paper: str
) -> None:
    session = one_shot(server, method_id)
    page = open_page("desktop")
    page.goto(session["checkoutUrl"])
    page.emulate_media(media="print")
    # What the cashier needs is there; what only works on a screen is not.
    for element in ("#shop-name", "#amount", "#due-date", "#barcode-image svg", "#barcode"):
        expect(page.locator(element)).to_be_visible()
    expect(page.locator("#order")).to_be_visible()
    expect(page.locator("#steps")).to_be_visible()
    for element in ("#print-voucher", "#copy-barcode", "#languages", "#return"):
        expect(page.locator(element)).to_be_hidden()
    pdf = page.pdf(format=paper, print_background=True)
    assert pdf.startswith(b"%PDF") and pdf_pages(pdf) == 1


# -- without JavaScript ----------------------------------------------------------------------


@pytest.mark.long(12)
def test_without_javascript_the_selector_flow_still_works_and_refreshes(
    server: Server, open_page: OpenPage
) -> None:
    session = server.create_session(country="BR", customer=CUSTOMER)  # no CPF: details form
    page = open_page("phone", java_script_enabled=False)
    page.goto(session["checkoutUrl"])
    expect(page.locator("h1")).to_have_text("Escolha como pagar")
    page.click("#method-1006")
    expect(page.locator("#details-form")).to_be_visible()
    page.fill("#documentId", CPF)
    page.click("#continue")
    page.wait_for_url(re.compile(r"/c/TXN-"))
    tx = server.payment(tx_of(page))
    # The codes are text to select by hand; the copy buttons need the script, so they hide.
    expect(page.locator("#pix-code")).to_have_text(tx["paymentData"]["qrCode"])
    expect(page.locator("#copy-pix-code")).to_be_hidden()
    # The page refreshes itself while pending (a <noscript> meta refresh).
    server.simulate(tx["id"], "paid")
    timeout = (NO_SCRIPT_REFRESH_SECONDS + 5) * 1000
    expect(page.locator("#status")).to_have_text("Pagamento recebido", timeout=timeout)
    expect(page.locator("#closed-message")).to_be_visible()


@pytest.mark.parametrize(
    ("method_id", "element"),
    [("1001", "#clabe"), ("1002", "#barcode"), ("1007", "#barcode")],
    ids=["spei", "oxxo", "boleto"],
)
def test_without_javascript_instructions_show_their_codes(
    server: Server, open_page: OpenPage, method_id: str, element: str
) -> None:
    session = one_shot(server, method_id)
    key = "clabe" if element == "#clabe" else "barcode"
    code = server.payment(session["sessionId"])["paymentData"][key]
    page = open_page("phone", java_script_enabled=False)
    page.goto(session["checkoutUrl"])
    expect(page.locator(element)).to_have_text(code)
    expect(page.locator("#steps")).to_be_visible()
    expect(page.locator("button[data-copy]").first).to_be_hidden()


def test_without_javascript_the_provider_page_and_errors_work(
    server: Server, open_page: OpenPage
) -> None:
    session = server.create_session(country="US", customer=CUSTOMER, returnUrl=RETURN_URL)
    page = open_page("phone", java_script_enabled=False)
    page.goto(session["checkoutUrl"])
    page.click("#method-1025")
    page.wait_for_url(re.compile(r"/_sim/provider/TXN-"))
    page.click("#approve")
    page.wait_for_url(RETURN_URL)
    tx_id = server.read_session(session["sessionId"])["completedTxId"]
    assert server.payment(tx_id)["status"] == "completed"
    response = page.goto(f"{server.url}/checkout/cs_never-issued?lang=es")
    assert response is not None and response.status == 404
    expect(page.locator("#error-title")).to_have_text("Este enlace de pago no está disponible")


def test_every_page_has_a_favicon(server: Server, open_page: OpenPage) -> None:
    # Headless Chromium fetches no favicon (none shows among the page's requests), so a missing
    # one would not reach open_page's console check: each page's icon is fetched here instead.
    session = one_shot(server, "1001")
    page = open_page("phone", locale="es-MX")
    for url in (
        session["checkoutUrl"],
        server.create_session(country="MX", customer=CUSTOMER)["checkoutUrl"],
        f"{server.url}/checkout/cs_never-issued",
        f"{server.url}/",
    ):
        page.goto(url)
        href = page.locator("link[rel=icon]").get_attribute("href")
        assert href == "/static/favicon.svg", url
        icon = page.request.get(server.url + href)
        assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"
    # Where no icon is linked (a JSON document opened in a tab) browsers ask for /favicon.ico.
    assert page.request.get(server.url + "/favicon.ico").status == 200
