"""The checkout pages' languages (simulator/i18n): the catalogues hold every message of the
sources, translated, with the same placeholders; the language a request gets; the formats."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir, extract_from_file
from babel.messages.pofile import read_po

from simulator.domain.rails import Layout
from simulator.http.pages.instructions import STEPS
from simulator.i18n import (
    LANGUAGES,
    SOURCE_LANGUAGE,
    Choice,
    PageLocale,
    negotiate,
    normalize,
    placeholders,
)
from simulator.i18n.extract import extract_fixtures, extract_templates

ROOT = Path(__file__).resolve().parents[2]
I18N = ROOT / "simulator" / "i18n"
KEYWORDS = {"_": None, "gettext": None, "N_": None}


def source_messages() -> set[str]:
    """What `pybabel extract -F simulator/i18n/babel.cfg -k N_` finds."""
    found: set[str] = set()
    for directory, method in (
        (ROOT / "simulator" / "http" / "pages", "python"),
        (ROOT / "simulator" / "templates", extract_templates),
    ):
        pattern = "**.py" if method == "python" else "**.html"
        for _, _, message, *_ in extract_from_dir(
            str(directory), [(pattern, method)], keywords=KEYWORDS
        ):
            assert isinstance(message, str)
            found.add(message)
    fixtures = ROOT / "simulator" / "fixtures" / "payment_methods.yaml"
    for _, message, *_ in extract_from_file(extract_fixtures, str(fixtures)):
        assert isinstance(message, str)
        found.add(message)
    return found


def catalogue(path: Path) -> Catalog:
    with path.open("rb") as po:
        return read_po(po)


@pytest.fixture(scope="module")
def messages() -> set[str]:
    found = source_messages()
    assert len(found) > 50
    return found


def test_the_template_file_is_current(messages: set[str]) -> None:
    pot = {m.id for m in catalogue(I18N / "messages.pot") if m.id}
    assert pot == messages, (
        "re-run pybabel extract (see simulator/i18n/__init__.py): "
        f"new {sorted(messages - pot)}, gone {sorted(pot - messages)}"
    )


@pytest.mark.parametrize("language", [lang for lang in LANGUAGES if lang != SOURCE_LANGUAGE])
def test_each_catalogue_translates_every_message(messages: set[str], language: str) -> None:
    po = catalogue(I18N / "locales" / language / "LC_MESSAGES" / "messages.po")
    entries = {m.id: m for m in po if m.id}
    assert set(entries) == messages, (
        "re-run pybabel update and translate: "
        f"missing {sorted(messages - set(entries))}, obsolete {sorted(set(entries) - messages)}"
    )
    for message_id, entry in entries.items():
        assert isinstance(message_id, str) and isinstance(entry.string, str)
        assert entry.string.strip(), f"{language}: no translation for {message_id!r}"
        assert not entry.fuzzy, f"{language}: fuzzy translation of {message_id!r}"
        # A placeholder lost or renamed would be a KeyError on the page; a stray `$` too.
        assert placeholders(entry.string) == placeholders(message_id), (language, message_id)
        assert entry.string.count("$") == message_id.count("$"), (language, message_id)


def test_the_english_texts_of_the_fixtures_are_messages(messages: set[str]) -> None:
    # Sandbox built-ins' names and labels and the fields' help are English; labels are local.
    assert {"Cash (sandbox)", "OXXO cash test method"} <= messages
    assert "Brazilian taxpayer id (CPF), 11 digits" in messages
    assert "CPF" not in messages and "Transferencia SPEI" not in messages


def test_messages_are_normalized_as_the_pages_look_them_up(messages: set[str]) -> None:
    assert all(normalize(m) == m for m in messages)


def test_every_layout_has_its_steps() -> None:
    assert set(STEPS) == set(Layout)


# -- which language ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lang", "accept", "country", "locale", "explicit"),
    [
        # The country decides where its language is one we translate into...
        (None, "en-US,en;q=0.9", "BR", "pt_BR", False),
        (None, "en-US", "MX", "es_MX", False),
        (None, None, "CO", "es_CO", False),
        (None, None, "AR", "es_AR", False),
        (None, "pt-BR", "CL", "es_CL", False),
        (None, None, "PE", "es_PE", False),
        # ...?lang= overrides it, with the country's region where that language has one...
        ("en", "es-MX", "MX", "en", True),
        ("es", None, "BR", "es_BR", True),
        ("pt", None, "MX", "pt_BR", True),
        ("es-CO", None, "MX", "es_CO", True),
        ("pt_br", None, None, "pt_BR", True),
        # ...an unknown ?lang= is ignored...
        ("fr", None, "MX", "es_MX", False),
        ("<script>", None, "BR", "pt_BR", False),
        # ...elsewhere the browser's first language we have, by q...
        (None, "es-MX,es;q=0.9,en;q=0.8", "US", "es_MX", False),
        (None, "fr-FR, pt;q=0.5, es;q=0.4", None, "pt_BR", False),
        (None, "es;q=0, en", None, "en", False),
        (None, "es", "US", "es_US", False),
        (None, "de, *", None, "en", False),
        # ...else English.
        (None, None, None, "en", False),
        (None, "", "US", "en_US", False),
        (None, "garbage;;q=x", None, "en", False),
    ],
)
def test_negotiation(
    lang: str | None, accept: str | None, country: str | None, locale: str, explicit: bool
) -> None:
    choice = negotiate(lang, accept, country)
    assert (choice.locale, choice.explicit) == (locale, explicit)
    assert choice.tag == locale.replace("_", "-")


def test_times_are_in_the_countrys_zone() -> None:
    assert negotiate(None, None, "BR").zone == "America/Sao_Paulo"
    assert negotiate(None, None, "MX").zone == "America/Mexico_City"
    assert negotiate("en", None, "PE").zone == "America/Lima"
    assert negotiate(None, None, "UY").zone == "America/Montevideo"  # CLDR's only zone there
    assert negotiate(None, None, None).zone == "UTC"


# -- formats ----------------------------------------------------------------------------------

NOON_UTC = datetime(2027, 1, 20, 15, 0, tzinfo=UTC)


def page_locale(locale: str, zone: str = "UTC") -> PageLocale:
    return PageLocale(Choice(locale.split("_")[0], locale, False, zone))


@pytest.mark.parametrize(
    ("locale", "amount", "currency", "decimals", "shown"),
    [
        ("pt_BR", "252.5", "BRL", 2, ("R$\xa0252,50", "BRL")),
        ("es_MX", "855", "MXN", 2, ("$855.00", "MXN")),
        ("es_CL", "46750", "CLP", 0, ("$46.750", "CLP")),
        ("en", "50", "USD", 2, ("$50.00", "USD")),
        # Where the locale writes the code itself, the number alone (the code is beside it).
        ("es_MX", "50", "USD", 2, ("50.00", "USD")),
        ("es_CO", "213750", "COP", 2, ("$213.750,00", "COP")),
    ],
)
def test_money(
    locale: str, amount: str, currency: str, decimals: int, shown: tuple[str, str]
) -> None:
    assert page_locale(locale).money(Decimal(amount), currency, decimals) == shown


def test_money_as_one_text_names_the_currency() -> None:
    assert page_locale("es_MX").money_text(Decimal(50), "USD", 2) == "50.00 USD"
    assert page_locale("pt_BR").money_text(Decimal(50), "USD", 2) == "US$\xa050,00"


@pytest.mark.parametrize(
    ("locale", "zone", "text"),
    [
        ("pt_BR", "America/Sao_Paulo", "20 de janeiro de 2027 12:00 (Horário de Brasília)"),
        ("es_MX", "America/Mexico_City", "20 de enero de 2027, 9:00\u202fa.m. (hora central)"),
        ("en", "UTC", "January 20, 2027, 3:00\u202fPM (GMT+00:00)"),
        # CLDR's id for Buenos Aires is its old name, which Babel does not map back to.
        # CLDR 48 (Babel 2.19) writes Argentine and Chilean times on the 24-hour clock, earlier
        # data on the 12-hour one: either is what a buyer there reads, so either passes.
        (
            "es_AR",
            "America/Argentina/Buenos_Aires",
            (
                "20 de enero de 2027, 12:00 (hora de Argentina)",
                "20 de enero de 2027, 12:00\u202fp.\u202fm. (hora de Argentina)",
            ),
        ),
        (
            "es_CL",
            "America/Santiago",
            (
                "20 de enero de 2027, 12:00 (hora de Chile)",
                "20 de enero de 2027, 12:00\u202fp.\u202fm. (hora de Chile)",
            ),
        ),
        (
            "es_CO",
            "America/Bogota",
            "20 de enero de 2027, 10:00\u202fa.\u202fm. (hora de Colombia)",
        ),
        ("es_PE", "America/Lima", "20 de enero de 2027, 10:00\u202fa.\u202fm. (hora de Perú)"),
    ],
)
def test_moments_in_the_language_and_zone(
    locale: str, zone: str, text: str | tuple[str, ...]
) -> None:
    accepted = (text,) if isinstance(text, str) else text
    assert page_locale(locale, zone).moment(NOON_UTC) in accepted


def test_messages_in_each_language() -> None:
    assert page_locale("pt_BR").gettext("Payment received") == "Pagamento recebido"
    assert page_locale("es_MX").gettext("Pay with $method", method="OXXO") == "Pagar con OXXO"
    assert page_locale("en").gettext("Pay with $method", method="SPEI") == "Pay with SPEI"
