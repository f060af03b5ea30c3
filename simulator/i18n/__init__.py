r"""The buyer's language on the hosted pages: which one (`negotiate`), its messages (gettext
catalogues) and its formats (Babel's CLDR data for money, dates and times).

Messages are English in the source: `_{...}` markers in `simulator/templates/` and `N_("...")` /
`PageLocale.gettext("...")` in `simulator/http/pages/`, plus the fixture texts a buyer reads that
are English (`extract.extract_fixtures`: sandbox methods' names and labels, the help of the fields
a rail asks for), shown through `PageLocale.data`. Placeholders are `$name`, filled after
translation. The Spanish and Portuguese catalogues are `locales/<language>/LC_MESSAGES/messages.po`,
compiled in memory the first time a page needs them (no .mo file to forget to rebuild). To add or
change a message:

    pybabel extract -F simulator/i18n/babel.cfg -k N_ --no-location --project payorch \
        --copyright-holder payorch -o simulator/i18n/messages.pot .
    pybabel update -i simulator/i18n/messages.pot -d simulator/i18n/locales -w 100 \
        --no-fuzzy-matching --ignore-obsolete

then translate the new entries; `tests/unit/test_i18n.py` fails while a catalogue lags the
sources. Babel is imported on the first page rendered, never at server start.

Which language (docs/decisions.md, "Checkout pages: language"):
1. `?lang=` when it names a language we have (en, es, pt; a region is kept: `es-CO`);
2. else the country of the session or payment when its language is Spanish or Portuguese;
3. else the browser's `Accept-Language`, its first language we have;
4. else English.
The region (number and date formats) is the one the deciding tag names, else the country's where
that language has one (es-BR), else one the browser names for that language, else the language's
Latin-American default (es-419, pt-BR); times are shown in the country's time zone.
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from importlib import resources
from string import Template
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gettext import NullTranslations

    from babel.core import Locale
    from babel.numbers import NumberPattern

SOURCE_LANGUAGE = "en"
LANGUAGES = ("en", "es", "pt")  # the languages a page can be in; es and pt have catalogues
# The Babel locale of a language when neither the request nor the country names a region:
# Latin-American Spanish, Brazilian Portuguese.
DEFAULT_LOCALES = {"en": "en", "es": "es_419", "pt": "pt_BR"}
# CLDR lists a country's time zones alphabetically, with no main one; a buyer is most likely in
# the capital's (or, for Brazil and the USA, the most populous region's). Other countries: their
# zone when CLDR knows exactly one, else UTC.
TIME_ZONES = {
    "AR": "America/Argentina/Buenos_Aires",
    "BR": "America/Sao_Paulo",
    "CL": "America/Santiago",
    "CO": "America/Bogota",
    "MX": "America/Mexico_City",
    "PE": "America/Lima",
    "US": "America/New_York",
}
# A translatable text in a template: `_{Choose how to pay}` (no braces inside).
MARKER = re.compile(r"_\{([^{}]+)\}")
_TAG = re.compile(r"([A-Za-z]{2,3})(?:[-_][A-Za-z]{4})?(?:[-_]([A-Za-z]{2}|[0-9]{3}))?")
_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def N_(message: str) -> str:
    """Mark a message for extraction where it is defined; it is translated where it is shown."""
    return message


def normalize(message: str) -> str:
    """A message as the catalogue keys it: runs of white space (a template's line breaks) as one
    space, so re-wrapping a template does not change its messages."""
    return " ".join(message.split())


def placeholders(message: str) -> set[str]:
    return set(_PLACEHOLDER.findall(message))


# -- negotiation ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Choice:
    """The negotiated language: pure data, what `negotiate` decides."""

    language: str  # one of LANGUAGES
    locale: str  # Babel's identifier: pt_BR, es_MX, es_419, en
    explicit: bool  # from ?lang=: links and forms carry it on
    zone: str  # IANA time zone for dates and times

    @property
    def tag(self) -> str:
        """BCP 47, for `<html lang>` and `Content-Language`: pt-BR, es-MX, es-419, en."""
        return self.locale.replace("_", "-")


def _parse_tag(tag: str) -> tuple[str, str | None] | None:
    match = _TAG.fullmatch(tag.strip())
    if match is None:
        return None
    region = match.group(2)
    return match.group(1).lower(), region.upper() if region else None


def _accept_language(header: str | None) -> list[tuple[str, str | None]]:
    """The header's tags, most wanted first (a stable sort on q; q=0 and `*` dropped)."""
    ranked: list[tuple[float, int, tuple[str, str | None]]] = []
    for index, item in enumerate((header or "").split(",")):
        tag, _, params = item.partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        parsed = _parse_tag(tag)
        if parsed is not None and quality > 0:
            ranked.append((-quality, index, parsed))
    return [parsed for _, _, parsed in sorted(ranked)]


@functools.cache
def _locale_exists(identifier: str) -> bool:
    from babel import localedata

    return localedata.exists(identifier)


@functools.cache
def country_language(iso2: str) -> str | None:
    """The country's main language by CLDR's likely subtags (BR: pt, MX: es, US: en)."""
    from babel.core import Locale, UnknownLocaleError

    try:
        return Locale.parse(f"und_{iso2}").language
    except (UnknownLocaleError, ValueError):
        return None


def time_zone(iso2: str | None) -> str:
    if iso2 is None:
        return "UTC"
    if iso2 in TIME_ZONES:
        return TIME_ZONES[iso2]
    from babel.core import get_global

    zones = get_global("territory_zones").get(iso2, ())
    return zones[0] if len(zones) == 1 else "UTC"


def negotiate(lang: str | None, accept_language: str | None, country: str | None) -> Choice:
    """The page's language from `?lang=`, the country (ISO-2) and the Accept-Language header."""
    browser = [tag for tag in _accept_language(accept_language) if tag[0] in LANGUAGES]
    asked = _parse_tag(lang) if lang else None
    explicit = asked is not None and asked[0] in LANGUAGES
    spoken = country_language(country) if country else None
    if asked is not None and explicit:
        language, region = asked
    elif spoken in LANGUAGES and spoken != SOURCE_LANGUAGE:
        language, region = spoken, None
    elif browser:
        language, region = browser[0]
    else:
        language, region = SOURCE_LANGUAGE, None
    candidates = [region, country, *(r for lg, r in browser if lg == language)]
    locale = next(
        (
            f"{language}_{r}"
            for r in candidates
            if r is not None and _locale_exists(f"{language}_{r}")
        ),
        DEFAULT_LOCALES[language],
    )
    return Choice(language, locale, explicit, time_zone(country))


# -- messages and formats ---------------------------------------------------------------------


@functools.cache
def translations(language: str) -> NullTranslations:
    """The language's catalogue, compiled from its .po file once per process."""
    import gettext

    if language == SOURCE_LANGUAGE:
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    source = resources.files(__name__) / "locales" / language / "LC_MESSAGES" / "messages.po"
    with source.open("rb") as po:
        catalog = read_po(po, locale=language)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)  # fuzzy entries are left out, as msgfmt does
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def translate_markers(source: str, language: str) -> str:
    """A template's `_{...}` texts in `language` (placeholders are left for the values)."""
    catalogue = translations(language)
    return MARKER.sub(lambda match: catalogue.gettext(normalize(match[1])), source)


@functools.cache
def language_name(language: str) -> str:
    """The language's name in itself, for a language switcher: English, Español, Português."""
    name = _babel_locale(DEFAULT_LOCALES[language]).language_name or language
    return name[:1].upper() + name[1:]


@functools.cache
def _babel_locale(identifier: str) -> Locale:
    from babel.core import Locale

    return Locale.parse(identifier)


@functools.cache
def _pattern(source: str, decimals: int) -> NumberPattern:
    """A CLDR number pattern with exactly `decimals` fraction digits: a new object, since the
    locale's own patterns are shared by every user of Babel in the process."""
    from babel.numbers import parse_pattern

    pattern = parse_pattern(source)
    pattern.frac_prec = (decimals, decimals)
    return pattern


@functools.cache
def _metazone(zone: str) -> str | None:
    """The CLDR metazone ("Argentina") of a zone Babel cannot name by itself, else None.

    Babel looks metazones up by CLDR's canonical id, which for some zones is the old name
    (America/Buenos_Aires), and its alias table maps that old name to the new one, never back:
    America/Argentina/Buenos_Aires gets "GMT-03:00" where its neighbours get "hora de Chile".
    """
    from babel.core import get_global

    metazones = get_global("meta_zones")
    if zone in metazones:
        return None  # Babel names it
    aliases = get_global("zone_aliases")
    return next(
        (metazones[old] for old, new in aliases.items() if new == zone and old in metazones), None
    )


def _has_symbol(text: str) -> bool:
    return any(not (char.isdigit() or char in ".,\u00a0\u202f '-") for char in text)


class PageLocale:
    """A negotiated language with its messages and CLDR formats, for one page."""

    __slots__ = ("_catalogue", "choice")

    def __init__(self, choice: Choice) -> None:
        self.choice = choice
        self._catalogue = translations(choice.language)

    @property
    def tag(self) -> str:
        return self.choice.tag

    @property
    def language(self) -> str:
        return self.choice.language

    def gettext(self, message: str, /, **values: object) -> str:
        """The message in this language, its `$name` placeholders filled with `values`."""
        text = self._catalogue.gettext(normalize(message))
        return Template(text).substitute(values) if values else text

    def data(self, text: str) -> str:
        """A fixture's text shown to the buyer (a method's name or label, the help of a field a
        rail asks for) in this language when the catalogue has it (the English ones: sandbox
        methods, field help), else as it is (most names and labels are already local)."""
        return self._catalogue.gettext(normalize(text)) if text.strip() else text

    def money(self, amount: Decimal, currency: str, decimals: int) -> tuple[str, str]:
        """(amount, ISO code) to show side by side: `R$ 252,50` BRL, `$855.00` MXN; the number
        alone (`50.00` USD) where the locale writes the code itself. In the locale's currency
        format, with the currency's minor-unit digits as the API rounds it."""
        locale = _babel_locale(self.choice.locale)
        pattern = _pattern(locale.currency_formats["standard"].pattern, decimals)
        text = pattern.apply(amount, locale, currency=currency, currency_digits=False)
        if currency in text:
            text = _pattern(locale.decimal_formats[None].pattern, decimals).apply(amount, locale)
        return text, currency

    def money_text(self, amount: Decimal, currency: str, decimals: int) -> str:
        """The amount as one text: `US$ 50,00`, or `50.00 USD` where the locale has no symbol."""
        text, code = self.money(amount, currency, decimals)
        return text if _has_symbol(text) else f"{text} {code}"

    def moment(self, at: datetime) -> str:
        """A date and time in the country's zone, the zone named: `20 de janeiro de 2027 11:30
        (Horário de Brasília)`."""
        from zoneinfo import ZoneInfo

        from babel import dates

        locale = _babel_locale(self.choice.locale)
        local = at.astimezone(ZoneInfo(self.choice.zone))
        day = dates.format_date(local, "long", locale=locale)
        time = dates.format_time(local, "short", tzinfo=local.tzinfo, locale=locale)
        metazone = _metazone(self.choice.zone)
        zone = (
            locale.meta_zones.get(metazone, {}).get("long", {}).get("generic")
            if metazone is not None
            else None
        ) or dates.get_timezone_name(local, "long", zone_variant="generic", locale=locale)
        # CLDR's own way of joining a date and a time in this language ("{1}, {0}", "{1} {0}").
        joined = str(locale.datetime_formats["medium"]).replace("'", "")
        return joined.replace("{1}", day).replace("{0}", time) + f" ({zone})"
