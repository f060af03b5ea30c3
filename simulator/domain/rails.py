"""The payment rails (`paymentData.method` slugs) and what each one's instructions are.

For a direct-flow method (instructions inline in `paymentData`), its rail says which reference the
buyer pays with (a CLABE, a PIX code, a barcode, a bank reference), whether the provider's bank
and beneficiary are shown, and which layout of the hosted checkout page shows it. A new rail is
one entry here (with a builder in `instructions.py` when its reference is of a new kind), its slug
in `payorch/vocabulary.py` and the OpenAPI `PaymentData.method` enum (both checked against this
table by tests), and its methods in `fixtures/payment_methods.yaml`. `docs/extending.md` has the
whole recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from random import Random
from typing import NamedTuple

from simulator.domain import instructions


class Charge(NamedTuple):
    """What a builder may read of the payment being created (a NamedTuple: made on every payment,
    built in a fraction of a frozen dataclass's time)."""

    rng: Random
    transaction_id: str
    amount_local: Decimal
    due_at: float
    beneficiary_name: str | None


class Layout(Enum):
    """How the hosted checkout page (`/c/<transaction_id>`) shows a rail's instructions."""

    CLABE = "clabe"  # a bank transfer to a CLABE with a reference
    QR = "qr"  # a QR code and its copy-and-paste text
    CASH_BARCODE = "cash_barcode"  # a barcode shown at a store's till
    BOLETO = "boleto"  # a boleto's typeable line and its barcode
    REFERENCE = "reference"  # a reference to quote, with bank details where there are some


Builder = Callable[[Charge], dict[str, str]]


@dataclass(frozen=True, slots=True)
class Rail:
    slug: str
    build: Builder
    layout: Layout
    shows_bank: bool = False  # the provider's bankName
    shows_beneficiary: bool = False  # the provider's beneficiaryName


def _spei(charge: Charge) -> dict[str, str]:
    clabe, reference = instructions.spei_account(charge.rng)
    return {"clabe": clabe, "reference": reference}


def _pix(charge: Charge) -> dict[str, str]:
    tx_id = charge.transaction_id
    code = instructions.pix_brcode(
        key=f"{tx_id.lower()}@pix.payorch.test"[:77],
        amount=charge.amount_local,
        merchant_name=charge.beneficiary_name or "PAYORCH",
        merchant_city="SAO PAULO",
        txid=tx_id.replace("-", ""),
    )
    return {"qrCode": code}


def _boleto(charge: Charge) -> dict[str, str]:
    due = datetime.fromtimestamp(charge.due_at, UTC).date()
    return {"barcode": instructions.boleto_line(charge.rng, charge.amount_local, due)}


def _oxxo(charge: Charge) -> dict[str, str]:
    return {"barcode": instructions.oxxo_barcode(charge.rng)}


def _voucher(charge: Charge) -> dict[str, str]:
    return {"barcode": instructions.voucher_code(charge.rng)}


def _reference(charge: Charge) -> dict[str, str]:
    return {"reference": instructions.spei_reference(charge.rng)}


def _rails(*rails: Rail) -> dict[str, Rail]:
    return {rail.slug: rail for rail in rails}


RAILS: dict[str, Rail] = _rails(
    # Rails whose methods are all hosted (the provider's page) still get a reference, should a
    # fixture ever make one of their methods direct.
    Rail("card", _reference, Layout.REFERENCE),
    Rail("debit", _reference, Layout.REFERENCE),
    Rail("bank_transfer", _reference, Layout.REFERENCE, shows_bank=True, shows_beneficiary=True),
    Rail("wire", _reference, Layout.REFERENCE, shows_bank=True, shows_beneficiary=True),
    Rail("spei", _spei, Layout.CLABE, shows_bank=True, shows_beneficiary=True),
    Rail("pix", _pix, Layout.QR, shows_beneficiary=True),
    Rail("oxxo", _oxxo, Layout.CASH_BARCODE),
    Rail("boleto", _boleto, Layout.BOLETO),
    Rail("voucher", _voucher, Layout.CASH_BARCODE),
    Rail("online_payment", _reference, Layout.REFERENCE),
    Rail("applepay", _reference, Layout.REFERENCE),
    Rail("googlepay", _reference, Layout.REFERENCE),
    Rail("crypto", _reference, Layout.REFERENCE),
)


def layout_of(slug: str) -> Layout:
    rail = RAILS.get(slug)
    return rail.layout if rail is not None else Layout.REFERENCE
