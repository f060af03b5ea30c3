"""The rail registry: one entry per `paymentData.method` slug, each building instructions of the
shape its checkout layout shows."""

from __future__ import annotations

from decimal import Decimal
from random import Random

import pytest

from payorch.vocabulary import PAYMENT_METHOD_SLUGS
from simulator.domain import instructions
from simulator.domain.rails import RAILS, Charge, Layout, layout_of

# What each layout needs in paymentData to show the rail's own view (else the reference view).
NEEDS = {
    Layout.CLABE: {"clabe", "reference"},
    Layout.QR: {"qrCode"},
    Layout.CASH_BARCODE: {"barcode"},
    Layout.BOLETO: {"barcode"},
    Layout.REFERENCE: {"reference"},
}


def test_every_slug_of_the_vocabulary_has_a_rail_and_no_other() -> None:
    assert list(RAILS) == list(PAYMENT_METHOD_SLUGS)
    assert all(RAILS[slug].slug == slug for slug in RAILS)


@pytest.mark.parametrize("slug", PAYMENT_METHOD_SLUGS)
def test_each_rail_builds_what_its_layout_shows(slug: str) -> None:
    rail = RAILS[slug]
    charge = Charge(Random(7), "TXN-ABC123", Decimal("150.00"), 1_800_000_000.0, "Loja Azul")
    data = rail.build(charge)
    assert set(data) == NEEDS[rail.layout]
    assert layout_of(slug) is rail.layout


def test_each_builder_gives_a_valid_reference_of_its_kind() -> None:
    charge = Charge(Random(7), "TXN-ABC123", Decimal("150.00"), 1_800_000_000.0, "Loja Azul")
    assert instructions.is_valid_brcode(RAILS["pix"].build(charge)["qrCode"])
    assert instructions.is_valid_boleto_line(RAILS["boleto"].build(charge)["barcode"])
    assert instructions.is_valid_oxxo_reference(RAILS["oxxo"].build(charge)["barcode"])
    assert instructions.is_valid_voucher_code(RAILS["voucher"].build(charge)["barcode"])


def test_an_unknown_slug_is_shown_as_a_reference() -> None:
    assert layout_of("not_a_rail") is Layout.REFERENCE
