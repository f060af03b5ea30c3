"""The landing page's health line works from the page (issue 36 item 10): every link on the
page answers without a key, the keyless check it gives (`curl -sf ORIGIN/`) answers 200, and
`GET /api/v1/ping`, which needs a key, is said to need one rather than offered as a link."""

from __future__ import annotations

import re

from tests.conftest import Api, assert_error

BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


async def landing(api: Api) -> str:
    response = await api.client.get("/", headers=BROWSER)
    assert response.status == 200
    return await response.text()


async def test_every_link_on_the_landing_page_answers_without_a_key(api: Api) -> None:
    html = await landing(api)
    links = re.findall(r'<a [^>]*href="([^"]+)"', html)
    assert links
    for href in links:
        response = await api.client.get(href, headers=BROWSER)
        assert 200 <= response.status < 300, (href, response.status)


async def test_the_health_line_gives_a_check_that_needs_no_key(api: Api) -> None:
    html = await landing(api)
    health = next(line for line in html.splitlines() if line.startswith("<li>Health:"))
    command = re.search(r"<code>curl -sf (\S+)</code>", health)
    assert command is not None, health
    path = "/" + command.group(1).split("/", 3)[3]  # the origin differs per test server
    response = await api.client.get(path)  # curl's Accept: */*, no Authorization
    assert response.status == 200 and (await response.json())["name"] == "payorch"
    assert "ping" in health and "needs a key" in health and "/ping</a>" not in html
    status, body, _ = await api.get("/ping", None)
    assert_error(status, body, 401, "missing_credentials")
