"""Every checkout page in each language at the phone (390x844) and desktop (1366x900) sizes, and
the picker in each country's locale: the screenshots in docs/screenshots/checkout/ that the README
links. Re-make them (and their index)
after a change to the pages with

    PAYORCH_UPDATE_SCREENSHOTS=1 pytest tests/browser/test_screenshots.py -p no:xdist

Without the variable the same pages are rendered into test-artifacts/screenshots/checkout/ and
checked (the language, the layout holding on the viewport's width); the PNGs are not compared
with the committed ones, which fonts and Chromium versions would make fail on other machines.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    CPF,
    CUSTOMER,
    RETURN_URL,
    RFC,
    VIEWPORTS,
    OpenPage,
    Server,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed").expect
pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
UPDATE = os.environ.get("PAYORCH_UPDATE_SCREENSHOTS") == "1"
OUT = ROOT / ("docs/screenshots" if UPDATE else "test-artifacts/screenshots") / "checkout"
LANGUAGES = {"en": "English", "es": "Spanish", "pt": "Portuguese"}
# name -> what it shows (the index's second column)
PAGES = {
    "picker": "method picker of a Mexican session: local amount first, test badges",
    "details": "the short form a rail asking for a missing document shows (PIX, CPF)",
    "spei": "SPEI instructions: CLABE and reference with copy buttons, steps",
    "pix": "PIX instructions: QR code, the whole copia e cola code, steps",
    "oxxo": "OXXO cash voucher: barcode, payee, due date, steps",
    "boleto": "boleto: typeable line and barcode, steps",
    "paid": "a payment page once the payment was received",
    "provider": "the simulated provider's page of a hosted rail (card)",
    "error": "an unknown or expired checkout link",
}
# The picker as each country's buyer gets it (no ?lang=, an en-US browser): its language,
# currency format and time zone.
COUNTRIES = {
    "MX": "es-MX",
    "CO": "es-CO",
    "AR": "es-AR",
    "CL": "es-CL",
    "PE": "es-PE",
    "BR": "pt-BR",
    "US": "en-US",
}
# Printed vouchers: the page as the print stylesheet lays it out on an A4 sheet (at 96 dpi).
PRINTS = {"oxxo": "1002", "boleto": "1007"}
A4 = {"width": 794, "height": 1123}

Visit = Callable[["Page"], None]


def one_shot(server: Server, method_id: str) -> str:
    """A one-shot session's checkoutUrl (/c/<transaction_id>?returnUrl=...)."""
    session = server.create_session(
        paymentMethodId=method_id,
        userName="Ana Souza",
        userEmail="ana@example.com",
        documentId=CPF if method_id in ("1006", "1007") else RFC,
        merchantOrderId="A-1042",
        returnUrl=RETURN_URL,
    )
    return str(session["checkoutUrl"])


def in_language(url: str, lang: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}lang={lang}"


def visits(server: Server, lang: str) -> dict[str, Visit]:
    """How to reach each page in `lang` (fresh data for each)."""

    def goto(url: str) -> Visit:
        def visit(page: Page) -> None:
            page.goto(in_language(url, lang))

        return visit

    mexico = server.create_session(
        country="MX", customer=CUSTOMER, merchantOrderId="A-1042", returnUrl=RETURN_URL
    )
    brazil = server.create_session(country="BR", customer=CUSTOMER)  # no CPF

    def details(page: Page) -> None:
        goto(brazil["checkoutUrl"])(page)
        page.click("#method-1006")
        expect(page.locator("#details-form")).to_be_visible()

    paid = one_shot(server, "1006")
    server.simulate(paid.split("/c/")[1].split("?")[0], "paid")
    card = server.create_session(
        country="US", customer=CUSTOMER, merchantOrderId="A-1042", returnUrl=RETURN_URL
    )

    def provider(page: Page) -> None:
        goto(card["checkoutUrl"])(page)
        page.click("#method-1025")
        page.wait_for_url(re.compile(r"/_sim/provider/"))

    return {
        "picker": goto(mexico["checkoutUrl"]),
        "details": details,
        "spei": goto(one_shot(server, "1001")),
        "pix": goto(one_shot(server, "1006")),
        "oxxo": goto(one_shot(server, "1002")),
        "boleto": goto(one_shot(server, "1007")),
        "paid": goto(paid),
        "provider": provider,
        "error": goto(f"{server.url}/checkout/cs_never-issued"),
    }


@pytest.mark.parametrize("lang", list(LANGUAGES))
@pytest.mark.long(13)
def test_every_page_in_each_language_at_both_sizes(
    server: Server, open_page: OpenPage, lang: str
) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for viewport in VIEWPORTS:
        page = open_page(viewport)
        for name, visit in visits(server, lang).items():
            visit(page)
            expect(page.locator("html")).to_have_attribute("lang", re.compile(f"^{lang}"))
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            page.screenshot(path=str(OUT / f"{name}-{lang}-{viewport}.png"), full_page=True)
    page = open_page("desktop")
    page.set_viewport_size(A4)  # type: ignore[arg-type]  # a plain dict for Playwright's ViewportSize
    page.emulate_media(media="print")
    for name, method_id in PRINTS.items():
        page.goto(in_language(one_shot(server, method_id), lang))
        page.screenshot(path=str(OUT / f"{name}-print-{lang}.png"))
    if UPDATE:
        shrink(OUT.glob(f"*-{lang}*.png"))
        browser = page.context.browser
        write_index(browser.version if browser else "?")


def test_the_picker_in_each_countrys_locale(server: Server, open_page: OpenPage) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    page = open_page("phone")
    shots = []
    for country, tag in COUNTRIES.items():
        session = server.create_session(
            country=country, customer=CUSTOMER, merchantOrderId="A-1042", returnUrl=RETURN_URL
        )
        page.goto(session["checkoutUrl"])
        expect(page.locator("html")).to_have_attribute("lang", tag)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shots.append(OUT / f"picker-{tag}-phone.png")
        page.screenshot(path=str(shots[-1]), full_page=True)
    if UPDATE:
        shrink(shots)
        browser = page.context.browser
        write_index(browser.version if browser else "?")


def shrink(paths: Iterable[Path]) -> None:
    """Quantize the PNGs with pngquant (Debian's package) when it is installed: a third of the
    size, no visible change; the committed screenshots went through it."""
    if shutil.which("pngquant") is None:
        return
    subprocess.run(
        ["pngquant", "--quality", "70-95", "--speed", "1", "--force", "--ext", ".png", *paths],
        check=True,
    )


def write_index(chromium: str) -> None:
    sizes = " and ".join(f"{v['width']}x{v['height']} ({k})" for k, v in VIEWPORTS.items())
    rows = [
        "| page | " + " | ".join(LANGUAGES.values()) + " |",
        "|---|" + "---|" * len(LANGUAGES),
    ]
    for name, what in PAGES.items():
        cells = [
            f"[phone]({name}-{lang}-phone.png) · [desktop]({name}-{lang}-desktop.png)"
            for lang in LANGUAGES
        ]
        rows.append(f"| `{name}`: {what} | " + " | ".join(cells) + " |")
    for name in PRINTS:
        cells = [f"[A4]({name}-print-{lang}.png)" for lang in LANGUAGES]
        what = f"the {name} voucher as printed (print stylesheet, one A4 page)"
        rows.append(f"| `{name}-print`: {what} | " + " | ".join(cells) + " |")
    countries = [
        "| country | picker (phone) |",
        "|---|---|",
        *(f"| {country} | [{tag}](picker-{tag}-phone.png) |" for country, tag in COUNTRIES.items()),
    ]
    text = "\n".join(
        [
            "# Checkout page screenshots",
            "",
            f"Every hosted checkout page in each language, at {sizes}, rendered by",
            "headless Chromium from a running `payorch serve`. Re-make them after a change to",
            "the pages with",
            "",
            "```sh",
            "PAYORCH_UPDATE_SCREENSHOTS=1 pytest tests/browser/test_screenshots.py -p no:xdist",
            "```",
            "",
            *rows,
            "",
            "The method picker as each country's buyer gets it, with no `?lang=` and a browser",
            "asking for en-US: the country's language, currency format and time zone.",
            "",
            *countries,
            "",
            f"Rendered with Chromium {chromium}.",
            "",
        ]
    )
    (OUT / "README.md").write_text(text, encoding="utf-8")
