"""The hosted checkout pages in headless Chromium, as a buyer and an integrator's e2e suite use
them: stable element ids, phone (390x844) and desktop (1366x900) viewports. Languages, the live
status, copy buttons, printing and runs without JavaScript are in test_checkout_experience.py.

Pages covered: /checkout/<token> (picker, details form, expired/unknown error page),
/c/<transaction_id> (PIX, SPEI, cash and boleto instructions; 307 to the provider for cards),
/_sim/provider/<id> (approve / decline, then back at returnUrl).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import CPF, CUSTOMER, RETURN_URL, RFC, OpenPage, Server

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect
pytestmark = pytest.mark.browser

VIEWPORTS = ["phone", "desktop"]
Shot = Callable[["Page", str], None]


def fits_the_viewport(page: Page) -> bool:
    """No horizontal scrolling: the layout holds on the viewport's width."""
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def tx_of(page: Page) -> str:
    match = re.search(r"/c/(TXN-[A-Z0-9]+)", page.url)
    assert match, page.url
    return match.group(1)


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_selector_flow_to_pix_instructions(
    server: Server, open_page: OpenPage, shot: Shot, viewport: str
) -> None:
    session = server.create_session(
        country="BR", customer={**CUSTOMER, "documentId": CPF}, returnUrl=RETURN_URL
    )
    page = open_page(viewport)
    page.goto(session["checkoutUrl"])
    # The country filters the grid: Brazilian methods only, each with its icon and BRL amount,
    # written the Brazilian way (the machine value is in data-amount).
    expect(page.locator("#method-1006")).to_be_visible()
    expect(page.locator("#method-1001")).to_have_count(0)
    expect(page.locator("#amount-1006")).to_have_text("R$ 252,50 BRL")
    expect(page.locator("#amount-1006")).to_have_attribute("data-amount", "252.50")
    expect(page.locator("#form-1006 img")).to_have_js_property("naturalWidth", 64)
    assert fits_the_viewport(page)
    shot(page, "picker")

    page.click("#method-1006")
    page.wait_for_url(re.compile(r"/c/TXN-"))
    tx = server.payment(tx_of(page))
    assert tx["status"] == "pending" and tx["paymentMethodId"] == "1006"
    qr = page.locator("#pix-qr svg.qr")
    expect(qr).to_be_visible()
    box = qr.bounding_box()
    assert box is not None and 150 <= box["width"] <= 260 and box["width"] == box["height"]
    # The whole code is on the page as text (not in a textarea a phone cuts off).
    expect(page.locator("#pix-code")).to_have_text(tx["paymentData"]["qrCode"])
    assert page.locator("#pix-code").evaluate(
        "e => e.scrollHeight <= e.clientHeight && e.scrollWidth <= e.clientWidth"
    ), "the Pix code does not fit its box"
    expect(page.locator("#due-date")).to_be_visible()
    expect(page.locator("#due-date")).to_have_attribute("datetime", tx["paymentData"]["dueDate"])
    expect(page.locator("#return")).to_have_attribute("href", RETURN_URL)
    assert fits_the_viewport(page)
    shot(page, "pix")

    # The session is locked: revisiting it lands on the same payment.
    page.goto(session["checkoutUrl"])
    assert tx_of(page) == tx["id"]


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_card_approved_on_the_provider_page_returns_to_the_shop(
    server: Server, open_page: OpenPage, shot: Shot, viewport: str
) -> None:
    session = server.create_session(country="US", customer=CUSTOMER, returnUrl=RETURN_URL)
    page = open_page(viewport)
    page.goto(session["checkoutUrl"])
    shot(page, "picker")
    page.click("#method-1025")
    # /c/<tx> answers 307 to the provider's page.
    page.wait_for_url(re.compile(r"/_sim/provider/TXN-"))
    expect(page.locator("#amount")).to_contain_text("50.00")
    assert fits_the_viewport(page)
    shot(page, "provider")

    page.click("#approve")
    page.wait_for_url(RETURN_URL)
    expect(page.locator("#shop-return")).to_be_visible()
    tx_id = server.read_session(session["sessionId"])["completedTxId"]
    assert server.payment(tx_id)["status"] == "completed"


def test_card_declined_fails_the_payment(server: Server, open_page: OpenPage, shot: Shot) -> None:
    session = server.create_session(country="US", customer=CUSTOMER, returnUrl=RETURN_URL)
    page = open_page("phone")
    page.goto(session["checkoutUrl"])
    page.click("#method-1025")
    page.wait_for_url(re.compile(r"/_sim/provider/TXN-"))
    page.click("#decline")
    page.wait_for_url(RETURN_URL)
    tx_id = server.read_session(session["sessionId"])["completedTxId"]
    assert server.payment(tx_id)["status"] == "failed"
    # Coming back later: the provider page says it is over, with the way back to the shop.
    page.goto(session["checkoutUrl"])
    expect(page.locator("#done")).to_be_visible()
    expect(page.locator("#approve")).to_have_count(0)
    expect(page.locator("#return")).to_have_attribute("href", RETURN_URL)
    shot(page, "provider-after-decline")


def test_rail_needing_a_document_asks_the_buyer_for_it(
    server: Server, open_page: OpenPage, shot: Shot
) -> None:
    session = server.create_session(country="BR", customer=CUSTOMER)  # no documentId
    page = open_page("phone")
    page.goto(session["checkoutUrl"])
    expect(page.locator("#needs-1006")).to_have_text("Pede: CPF")  # a Brazilian session
    page.click("#method-1006")
    expect(page.locator("#details-form")).to_be_visible()
    shot(page, "details")
    page.fill("#documentId", "529.982.247-25")
    page.click("#continue")
    page.wait_for_url(re.compile(r"/c/TXN-"))
    expect(page.locator("#pix-qr svg")).to_be_visible()


@pytest.mark.parametrize(
    ("method_id", "document", "element"),
    [("1001", RFC, "#clabe"), ("1002", RFC, "#barcode"), ("1007", CPF, "#barcode")],
    ids=["spei", "oxxo", "boleto"],
)
def test_direct_rail_instructions(
    server: Server, open_page: OpenPage, shot: Shot, method_id: str, document: str, element: str
) -> None:
    # One-shot mode: the session is the transaction and checkoutUrl is /c/<transaction_id>.
    session = server.create_session(
        paymentMethodId=method_id,
        userName="Ana Souza",
        userEmail="ana@example.com",
        documentId=document,
        returnUrl=RETURN_URL,
    )
    data: dict[str, Any] = server.payment(session["sessionId"])["paymentData"]
    page = open_page("phone" if method_id != "1007" else "desktop")
    page.goto(session["checkoutUrl"])
    if element == "#clabe":
        expect(page.locator("#clabe")).to_have_text(data["clabe"])
        expect(page.locator("#reference")).to_have_text(data["reference"])
    else:
        expect(page.locator("#barcode")).to_have_text(data["barcode"])
        expect(page.locator("#barcode-image svg.barcode")).to_be_visible()
    expect(page.locator("#due-date")).to_have_attribute("datetime", data["dueDate"])
    assert fits_the_viewport(page)
    shot(page, "instructions")


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_expired_session_shows_the_error_page(
    server: Server, open_page: OpenPage, shot: Shot, viewport: str
) -> None:
    session = server.create_session(customer=CUSTOMER)
    server.advance(86_401)
    page = open_page(viewport)
    response = page.goto(session["checkoutUrl"])
    assert response is not None and response.status == 404
    expect(page.locator("#error-title")).to_have_text("This checkout link is not available")
    expect(page.locator("#error-message")).to_contain_text("24 hours")
    expect(page.locator("body")).not_to_contain_text("Traceback")
    shot(page, "expired")
    response = page.goto(f"{server.url}/checkout/cs_never-issued")
    assert response is not None and response.status == 404
    expect(page.locator("#error-title")).to_be_visible()


def test_xss_in_the_customer_name_shows_as_text(
    server: Server, open_page: OpenPage, shot: Shot
) -> None:
    evil = "<script>alert(1)</script>"
    session = server.create_session(
        customer={**CUSTOMER, "firstName": evil, "lastName": "<img src=x onerror=alert(2)>"}
    )
    page = open_page("desktop")
    page.goto(session["checkoutUrl"])
    expect(page.locator("#customer-name")).to_have_text(f"{evil} <img src=x onerror=alert(2)>")
    # The page's one script is its own; the CSP would refuse any other.
    assert page.locator("script").count() == 1
    assert page.locator("script[src='/static/checkout.js']").count() == 1
    assert page.locator("#picker img[src='x']").count() == 0
    shot(page, "picker")
    # `open_page` fails the test if any dialog opened.
