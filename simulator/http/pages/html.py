"""Server-rendered pages: `string.Template` files under `simulator/templates`, escaped by default,
in the buyer's language.

Every value substituted into a template is HTML-escaped unless it is `Markup` (HTML this module or
another template already produced), so a user-supplied string can only ever show up as text. A
template's `_{...}` texts are translated first (`simulator.i18n`), then its `$values` filled in.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable
from html import escape
from importlib import resources
from string import Template
from urllib.parse import urlsplit

from aiohttp import web

from simulator.domain.countries import ISO3_TO_ISO2
from simulator.domain.errors import ApiError
from simulator.http.keys import REQUEST_ID
from simulator.i18n import (
    LANGUAGES,
    N_,
    PageLocale,
    language_name,
    negotiate,
    translate_markers,
)

log = logging.getLogger(__name__)

PageHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# No-JavaScript pages refresh themselves this often while a payment is pending (with JavaScript
# the page polls its status every second instead).
NO_SCRIPT_REFRESH_SECONDS = 10


def content_security_policy(nonce: str) -> str:
    """Only the page's own script (by its per-response nonce) runs, and it may only fetch from
    this origin; styles and images come from this origin (and inline SVG / data: images).
    form-action allows http(s) because Chromium applies it to the redirect after a form post, and
    the provider page's buttons end at the merchant's returnUrl."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}'; connect-src 'self'; "
        "img-src 'self' data:; style-src 'self'; form-action 'self' http: https:; "
        "base-uri 'none'; frame-ancestors 'none'"
    )


SECURITY_HEADERS = {
    # Checkout URLs carry the session token: never leak it to the next site in a Referer.
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    # The language follows the Accept-Language header when nothing else decides it.
    "Vary": "Accept-Language",
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
def _source(name: str) -> str:
    path = resources.files("simulator") / "templates"
    for part in name.split("/"):
        path = path / part
    # Without the file's final line break, so that an inline snippet adds no space.
    return path.read_text(encoding="utf-8").removesuffix("\n")


@functools.cache
def _template(name: str, language: str) -> Template:
    return Template(translate_markers(_source(name), language))


def render(template: str, loc: PageLocale, /, **values: object) -> Markup:
    """Fill `template` (e.g. "checkout/picker.html") in `loc`'s language; a missing value is a
    KeyError."""
    filled = _template(template, loc.language).substitute({k: _html(v) for k, v in values.items()})
    return Markup(filled)


def join(parts: Iterable[Markup]) -> Markup:
    return Markup("".join(parts))


def locale_for(request: web.Request, country: str | None = None) -> PageLocale:
    """The page's language for this request and the payment's country (ISO-3, or None)."""
    iso2 = ISO3_TO_ISO2.get(country) if country else None
    query = request.query.get("lang")
    return PageLocale(negotiate(query, request.headers.get("Accept-Language"), iso2))


def keep_lang(path: str, loc: PageLocale) -> str:
    """`path` carrying a language the buyer chose with `?lang=`, so the next page keeps it."""
    if not loc.choice.explicit:
        return path
    return f"{path}{'&' if '?' in path else '?'}lang={loc.tag}"


def safe_href(url: str | None) -> str | None:
    """Only absolute http(s) URLs become links (no `javascript:` even if one got stored)."""
    if not url:
        return None
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


def link(loc: PageLocale, link_id: str, url: str | None, text: str) -> Markup:
    """A link out of the pages (to the merchant's returnUrl), or nothing for an unusable URL."""
    href = safe_href(url)
    if href is None:
        return Markup("")
    return render("return_link.html", loc, link_id=link_id, href=href, text=text)


ENVIRONMENT_TEXT = {
    "sandbox": N_("Sandbox: a test payment, no real money moves."),
    "production": N_("Production mode, simulated by payorch: no real money moves."),
}


def _languages(loc: PageLocale, path: str) -> Markup:
    links = join(
        render(
            "language_link.html",
            loc,
            code=code,
            href=f"{path}?lang={code}",
            name=language_name(code),
            current=Markup(' aria-current="true"') if code == loc.language else Markup(""),
        )
        for code in LANGUAGES
    )
    return render("languages.html", loc, links=links)


def page(
    request: web.Request,
    loc: PageLocale,
    title: str,
    content: Markup,
    *,
    status: int = 200,
    environment: str | None = None,
    refresh: bool = False,
    switch_path: str | None = None,
) -> web.Response:
    """The whole page. `environment` (sandbox or production) is said in the footer; `refresh`
    reloads the page without JavaScript (a pending payment); the language links point at
    `switch_path`, by default the page itself when it was a GET."""
    nonce = secrets.token_urlsafe(18)
    if switch_path is None and request.method == "GET":
        switch_path = request.path
    text = render(
        "layout.html",
        loc,
        lang=loc.tag,
        title=title,
        content=content,
        nonce=nonce,
        refresh=(
            render("refresh.html", loc, seconds=NO_SCRIPT_REFRESH_SECONDS)
            if refresh
            else Markup("")
        ),
        environment=(
            render(
                "environment.html",
                loc,
                environment=environment,
                text=loc.gettext(ENVIRONMENT_TEXT[environment]),
            )
            if environment in ENVIRONMENT_TEXT
            else Markup("")
        ),
        languages=_languages(loc, switch_path) if switch_path else Markup(""),
    )
    headers = {
        **SECURITY_HEADERS,
        "Content-Security-Policy": content_security_policy(nonce),
        "Content-Language": loc.tag,
    }
    return web.Response(text=text, status=status, content_type="text/html", headers=headers)


# Friendly words for the errors a buyer can meet; anything else shows the error's own message.
_FRIENDLY: dict[str, tuple[str, str]] = {
    "checkout_session_not_found": (
        N_("This checkout link is not available"),
        N_(
            "The link is unknown or has expired (checkout links last 24 hours). Go back to the "
            "shop and start the payment again."
        ),
    ),
    "transaction_not_found": (
        N_("We could not find this payment"),
        N_("The link is unknown. Go back to the shop and start the payment again."),
    ),
    "route_not_found": (N_("Page not found"), N_("There is nothing at this address.")),
}


def error_page(
    request: web.Request,
    error: ApiError,
    *,
    loc: PageLocale | None = None,
    back_href: str | None = None,
    environment: str | None = None,
) -> web.Response:
    loc = loc or locale_for(request)
    title, message = _FRIENDLY.get(error.code, (N_("We could not complete this step"), ""))
    message = loc.gettext(message) if message else error.message
    details = error.details or {}
    fields = [*details.get("missingFields", []), *details.get("malformedFields", [])]
    items = join(
        render(
            "field_item.html",
            loc,
            label=loc.data(str(f.get("label") or f.get("key") or "")),
            help=loc.data(str(f.get("help") or "")),
        )
        for f in fields
        if isinstance(f, dict)
    )
    back = render("back_link.html", loc, href=back_href) if back_href else Markup("")
    content = render(
        "error.html",
        loc,
        title=loc.gettext(title),
        message=message,
        fields=render("field_list.html", loc, items=items) if items else Markup(""),
        back=back,
        code=error.code,
        request_id=request.get(REQUEST_ID, ""),
    )
    return page(
        request,
        loc,
        loc.gettext(title),
        content,
        status=error.status,
        environment=environment,
        switch_path=back_href,
    )


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
