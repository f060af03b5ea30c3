"""The server's own documents: the OpenAPI 3.1 document the server validates requests with
(GET /api/v1/openapi.json), and the landing page at / that points a newcomer at everything."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape
from importlib import metadata
from pathlib import Path

from aiohttp import web

from simulator.http.middlewares import auth
from simulator.http.pages.html import SECURITY_HEADERS, Markup, PageLocale, join, render
from simulator.http.requests import base_url
from simulator.http.responses import json_response
from simulator.i18n import negotiate
from simulator.openapi.document import document_json

# The landing page is for developers, in English, with its few styles inline and no script.
ENGLISH = PageLocale(negotiate("en", None, None))
LANDING_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)

# What the landing page lists of the control plane (its full description: the OpenAPI document).
CONTROL_PLANE = (
    ("GET", "/_sim/clock", "the simulated clock"),
    ("POST", "/_sim/clock/advance", "move it forward, running what falls due"),
    ("GET", "/_sim/events", "the caller's events as server-sent events"),
    ("POST", "/_sim/deposits", "a transfer into a deposit account's CLABE"),
    ("POST", "/_sim/withdrawals", "a withdrawal of the available balance"),
)


@auth("none")
async def openapi_document(request: web.Request) -> web.Response:
    # Built once per process; the same bytes for every caller (no credential needed).
    return web.Response(body=document_json(), content_type="application/json")


def _version() -> str:
    try:
        return metadata.version("payorch")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def favicon(path: Path) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """GET /favicon.ico: the SVG icon every page links (a day in caches)."""

    @auth("none")
    async def icon(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(
            path,
            headers={"Content-Type": "image/svg+xml", "Cache-Control": "public, max-age=86400"},
        )

    return icon


@auth("none")
async def landing(request: web.Request) -> web.Response:
    """HTML for a browser (an Accept naming text/html), JSON for everything else (curl's */*)."""
    origin, version = base_url(request), _version()
    if "text/html" not in request.headers.get("Accept", ""):
        return json_response(
            {
                "name": "payorch",
                "version": version,
                "api": f"{origin}/api/v1",
                "openapi": f"{origin}/api/v1/openapi.json",
                "checkout": {
                    "session": f"{origin}/checkout/{{token}}",
                    "transaction": f"{origin}/c/{{transaction_id}}",
                },
                "controlPlane": [
                    {"method": method, "path": path, "description": what}
                    for method, path, what in CONTROL_PLANE
                ],
            }
        )
    items = join(
        Markup(f"<li><code>{escape(method)} {escape(path)}</code>: {escape(what)}</li>")
        for method, path, what in CONTROL_PLANE
    )
    html = render("landing.html", ENGLISH, version=version, origin=origin, control_plane=items)
    return web.Response(
        text=html,
        content_type="text/html",
        headers={**SECURITY_HEADERS, "Content-Security-Policy": LANDING_CSP},
    )
