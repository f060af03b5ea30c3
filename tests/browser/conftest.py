"""Browser tests: a real `payorch serve` process driven by headless Chromium through Playwright.

Debian's chromium (/usr/bin/chromium, installed by .ci/run) is used as is: Playwright never
downloads a browser here. Without it, or without Playwright, these tests skip with the reason.

The server and the browser are module-scoped on purpose: Playwright's sync API keeps its event
loop marked as running between calls, so it must be closed before the pytest-asyncio tests that
an xdist worker may run next (pytest tears module fixtures down when the next test is elsewhere).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Dialog,
        Page,
        Response,
        Route,
    )

PAYORCH = [sys.executable, "-m", "payorch_cli.main"]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Why these tests skip, and how to enable them.
MISSING_CHROMIUM = (
    f"{CHROMIUM} is missing: the browser tests drive Debian's chromium; install it with "
    "`apt-get update && apt-get install chromium` (as root, as .ci/run does) to run them"
)
MISSING_PLAYWRIGHT = (
    "Playwright is not installed: `pip install -e '.[test]'` to run the browser tests"
)
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1366, "height": 900}}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
SANDBOX_SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"  # mer_mercadoazul / shp_mazul_tienda
# The merchant's site the buyer returns to; the browser context answers it (no network).
SHOP_ORIGIN = "https://shop.example"
RETURN_URL = f"{SHOP_ORIGIN}/orders/42/return"
# A buyer the browser tests fill the forms with (valid check digits).
CPF = "52998224725"
RFC = "XAXX010101000"
CUSTOMER = {
    "firstName": "Ana",
    "lastName": "Souza",
    "email": "ana@example.com",
    "phone": "+5511987654321",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives the checkout pages in headless Chromium (tests/browser)"
    )


class Server:
    """`payorch serve --port 0` in its own data dir, plus the API calls the tests need."""

    def __init__(self, data_dir: Path) -> None:
        log = (data_dir.parent / "serve.log").open("w")
        self.proc = subprocess.Popen(
            [*PAYORCH, "serve", "--port", "0", "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = re.fullmatch(r"Listening on (http://\S+)\n", line)
        if match is None:
            self.stop()
            raise RuntimeError(f"payorch serve did not start: {line!r}; see {log.name}")
        self.url = match.group(1)

    def call(self, method: str, path: str, body: Any = None, key: str | None = SANDBOX_SK) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={"Content-Type": "application/json"}
            | ({"Authorization": f"Bearer {key}"} if key else {}),
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: {error.code} {error.read()!r}") from None

    def create_session(self, **body: Any) -> dict[str, Any]:
        return self.call("POST", "/api/v1/checkout/sessions", {"amount": 50, **body})

    def read_session(self, token: str) -> dict[str, Any]:
        return self.call("GET", f"/api/v1/checkout/sessions/{token}", key=None)

    def payment(self, tx_id: str) -> dict[str, Any]:
        return self.call("GET", f"/api/v1/payments/{tx_id}")

    def advance(self, seconds: float) -> None:
        self.call("POST", "/_sim/clock/advance", {"seconds": seconds})

    def simulate(self, tx_id: str, action: str) -> dict[str, Any]:
        """Move a sandbox payment on through the API (paid, failed, expired...)."""
        return self.call("POST", f"/api/v1/payments/{tx_id}/simulate", {"action": action})

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.skip(MISSING_CHROMIUM)
    sync_api = pytest.importorskip("playwright.sync_api", reason=MISSING_PLAYWRIGHT)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Depends on `browser` so that a missing Chromium skips before a server is started.
    running = Server(tmp_path_factory.mktemp("payorch") / "data")
    yield running
    running.stop()


def _shop_page(route: Route) -> None:
    route.fulfill(
        status=200,
        content_type="text/html",
        body="<!doctype html><title>Shop</title><h1 id='shop-return'>Back at the shop</h1>",
    )


class OpenPage(Protocol):
    def __call__(self, viewport: str, **context: Any) -> Page: ...


@pytest.fixture
def open_page(browser: Browser) -> Iterator[OpenPage]:
    """`open_page("phone" | "desktop", **context_options)`: a fresh context (no cookies) with
    that viewport; options go to `browser.new_context` (`locale="es-MX"` sets Accept-Language,
    `java_script_enabled=False`, `permissions=[...]`).

    Any JavaScript dialog fails the test (the pages' own script opens none, so one means
    injected code), and so does a console error or a failed request to the server (a 404
    stylesheet or image, a script the CSP blocked). Headless Chromium fetches no favicon:
    test_every_page_has_a_favicon fetches the icons itself.
    """
    contexts: list[BrowserContext] = []
    dialogs: list[str] = []
    problems: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    def on_console(message: ConsoleMessage) -> None:
        # A failed load is reported by on_response, where an error page's own status is fine.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            problems.append(f"console: {message.text}")

    def on_response(response: Response) -> None:
        if response.status >= 400 and response.request.resource_type != "document":
            problems.append(f"{response.status} {response.url}")

    def make(viewport: str, **options: Any) -> Page:
        context = browser.new_context(viewport=VIEWPORTS[viewport], **options)  # type: ignore[arg-type]  # a plain dict for Playwright's ViewportSize
        context.route(f"{SHOP_ORIGIN}/**", _shop_page)
        contexts.append(context)
        page = context.new_page()
        page.on("dialog", on_dialog)
        page.on("console", on_console)
        page.on("response", on_response)
        return page

    yield make
    for context in contexts:
        context.close()
    assert not dialogs, f"a script ran and opened dialogs: {dialogs}"
    assert not problems, f"console errors or failed requests: {problems}"


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Page, str], None]:
    """Save a full-page screenshot as test-artifacts/screenshots/<test>-<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    test = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")

    def save(page: Page, name: str) -> None:
        page.screenshot(path=str(SCREENSHOTS / f"{test}-{name}.png"), full_page=True)

    return save
