"""Server-rendered pages: `string.Template` files under `simulator/templates`, escaped by default.

Every value substituted into a template is HTML-escaped unless it is `Markup` (HTML this module or
another template already produced), so a user-supplied string can only ever show up as text.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from html import escape
from importlib import resources
from string import Template
from urllib.parse import urlsplit

from aiohttp import web

from simulator.domain.errors import ApiError
from simulator.http.keys import REQUEST_ID

log = logging.getLogger(__name__)

PageHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# No script may run on these pages (they need none); inline styles and same-origin images only.
# form-action allows http(s) because Chromium applies it to the redirect after a form post, and
# the provider page's buttons end at the merchant's returnUrl.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
        "form-action 'self' http: https:; base-uri 'none'; frame-ancestors 'none'"
    ),
    # Checkout URLs carry the session token: never leak it to the next site in a Referer.
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


class Markup(str):
    """HTML that is safe to insert as is."""

    __slots__ = ()


def _html(value: object) -> str:
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    return escape(str(value), quote=True)


@functools.cache
def _template(name: str) -> Template:
    path = resources.files("simulator") / "templates"
    for part in name.split("/"):
        path = path / part
    return Template(path.read_text(encoding="utf-8"))


def render(template: str, /, **values: object) -> Markup:
    """Fill `template` (e.g. "checkout/picker.html"); a missing value is a KeyError."""
    return Markup(_template(template).substitute({k: _html(v) for k, v in values.items()}))


def join(parts: Iterable[Markup]) -> Markup:
    return Markup("".join(parts))


def safe_href(url: str | None) -> str | None:
    """Only absolute http(s) URLs become links (no `javascript:` even if one got stored)."""
    if not url:
        return None
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


def link(link_id: str, url: str | None, text: str) -> Markup:
    """A link out of the pages (to the merchant's returnUrl), or nothing for an unusable URL."""
    href = safe_href(url)
    if href is None:
        return Markup("")
    return render("return_link.html", link_id=link_id, href=href, text=text)


def page(title: str, content: Markup, *, status: int = 200) -> web.Response:
    return web.Response(
        text=render("layout.html", title=title, content=content),
        status=status,
        content_type="text/html",
        headers=SECURITY_HEADERS,
    )


# Friendly words for the errors a buyer can meet; anything else shows the error's own message.
_FRIENDLY: dict[str, tuple[str, str]] = {
    "checkout_session_not_found": (
        "This checkout link is not available",
        "The link is unknown or has expired (checkout links last 24 hours). Go back to the shop "
        "and start the payment again.",
    ),
    "transaction_not_found": (
        "We could not find this payment",
        "The link is unknown. Go back to the shop and start the payment again.",
    ),
    "route_not_found": ("Page not found", "There is nothing at this address."),
}


def error_page(
    request: web.Request, error: ApiError, *, back_href: str | None = None
) -> web.Response:
    title, message = _FRIENDLY.get(error.code, ("We could not complete this step", error.message))
    details = error.details or {}
    fields = [*details.get("missingFields", []), *details.get("malformedFields", [])]
    items = join(
        render("field_item.html", label=f.get("label", f.get("key")), help=f.get("help", ""))
        for f in fields
        if isinstance(f, dict)
    )
    back = render("back_link.html", href=back_href) if back_href else Markup("")
    content = render(
        "error.html",
        title=title,
        message=message,
        fields=render("field_list.html", items=items) if items else Markup(""),
        back=back,
        code=error.code,
        request_id=request.get(REQUEST_ID, ""),
    )
    return page(title, content, status=error.status)


def html_errors(handler: PageHandler) -> PageHandler:
    """Render failures of a page handler as an HTML page with the right status, never JSON or a
    stack trace; redirects pass through."""

    @functools.wraps(handler)
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException:
            raise
        except ApiError as error:
            return error_page(request, error)
        except Exception:
            log.exception("unhandled error on page %s (%s)", request.path, request.get(REQUEST_ID))
            return error_page(request, ApiError("internal_error"))

    return wrapped
