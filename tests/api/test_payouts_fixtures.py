"""payout_methods.yaml: the built-in payout and deposit methods, and a user's broken copy reported
as `FixtureError("<file>: <where>: <problem>")` like the four other fixture files."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from simulator.domain.catalog import RECIPIENT_FIELD_TYPES, Catalog
from simulator.domain.documents import is_valid_cbu, is_valid_clabe
from simulator.fixture_loader import (
    PAYOUT_METHODS_FILE,
    FixtureError,
    builtin_fixtures_dir,
    load_catalog,
)


def test_builtin_payout_methods(catalog: Catalog) -> None:
    methods = catalog.payout_methods
    synthetic = [m.id for m in methods.values() if m.sandbox_only]
    assert synthetic == ["sbx_po_mx_spei", "sbx_po_br_pix", "sbx_po_co_bank", "sbx_po_pe_bank"]
    real = [m for m in methods.values() if not m.sandbox_only]
    assert {(m.country, m.rail) for m in real} >= {
        ("MX", "spei"),
        ("BR", "pix"),
        ("CO", "bank"),
        ("CL", "bank"),
        ("PE", "bank"),
        ("AR", "bank"),
        ("CO", "phone_wallet"),
        ("PE", "phone_wallet"),
        ("US", "email_wallet"),
    }
    for method in methods.values():
        assert method.min_usd <= method.max_usd
        assert method.currency in catalog.fx.usd_rates
        assert {f.type for f in method.recipient_fields} <= set(RECIPIENT_FIELD_TYPES)
        # Every real rail shows how its simulated provider rejects; synthetic ones never do.
        assert bool(method.rejections) != method.sandbox_only, method.id
    for bank in ("po_co_bank", "po_cl_bank", "po_pe_bank"):
        fields = {f.key: f for f in methods[bank].recipient_fields}
        assert fields["bankCode"].type == "select" and fields["bankCode"].options


def test_rejection_values_pass_the_recipient_checks(catalog: Catalog) -> None:
    """A rejection value must reach the provider, so it must be a valid value for its field."""
    spei = catalog.payout_methods["po_mx_spei"].rejections[0]
    assert is_valid_clabe(spei.value)
    cbu = catalog.payout_methods["po_ar_bank"].rejections[0]
    assert is_valid_cbu(cbu.value)


def test_builtin_deposit_methods(catalog: Catalog) -> None:
    methods = catalog.deposit_methods
    assert set(methods) == {"dm_spei_stp", "dm_spei_alt"}
    assert methods["dm_spei_stp"].bank_name == "STP"
    assert methods["dm_spei_alt"].bank_name is None
    for method in methods.values():
        assert catalog.methods[method.payment_method_id].local_currency == method.currency
    for shop in catalog.shops.values():
        assert set(shop.deposit_method_ids) <= set(methods)


# ---------------------------------------------------------------------------- user copies


@pytest.fixture
def copy_dir(tmp_path: Path) -> Path:
    target = tmp_path / "fixtures"
    with resources.as_file(builtin_fixtures_dir()) as source:
        shutil.copytree(source, target)
    return target


def _edit(directory: Path, name: str, old: str, new: str) -> None:
    path = directory / name
    text = path.read_text(encoding="utf-8")
    assert old in text, f"test setup: {old!r} not in {name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_an_unchanged_copy_loads_the_same_methods(copy_dir: Path, catalog: Catalog) -> None:
    copied = load_catalog(copy_dir)
    assert copied.payout_methods == catalog.payout_methods
    assert copied.deposit_methods == catalog.deposit_methods


def test_the_payout_file_is_required_in_a_copy(copy_dir: Path) -> None:
    (copy_dir / PAYOUT_METHODS_FILE).unlink()
    with pytest.raises(FixtureError, match=r"payout_methods\.yaml: file: missing"):
        load_catalog(copy_dir)


@pytest.mark.parametrize(
    ("old", "new", "where", "problem"),
    [
        pytest.param(
            '    rail: spei\n    country: MX\n    currency: MXN\n    minUsd: "1"\n'
            '    maxUsd: "50000"\n    icon: spei.svg\n    recipientFields: *spei_fields\n'
            "    rejections:",
            '    rail: wire\n    country: MX\n    currency: MXN\n    minUsd: "1"\n'
            '    maxUsd: "50000"\n    icon: spei.svg\n    recipientFields: *spei_fields\n'
            "    rejections:",
            "payoutMethods[po_mx_spei].rail",
            "'wire' is not one of",
            id="unknown-rail",
        ),
        pytest.param(
            "  - id: po_cl_bank\n",
            "  - id: po_mx_spei\n",
            "payoutMethods[po_mx_spei].id",
            "duplicate id 'po_mx_spei'",
            id="duplicate-id",
        ),
        pytest.param(
            "    currency: ARS\n",
            "    currency: JPY\n",
            "payoutMethods[po_ar_bank].currency",
            "JPY has no rate in fx.yaml",
            id="currency-without-rate",
        ),
        pytest.param(
            '    minUsd: "5"\n    maxUsd: "10000"\n    icon: bank.svg\n    recipientFields:\n'
            "      - *name\n      - {key: account, label: CBU or CVU",
            '    minUsd: "50000"\n    maxUsd: "10000"\n    icon: bank.svg\n    recipientFields:\n'
            "      - *name\n      - {key: account, label: CBU or CVU",
            "payoutMethods[po_ar_bank].maxUsd",
            "minUsd 50000 is above maxUsd 10000",
            id="min-above-max",
        ),
        pytest.param(
            "icon: email-wallet.svg",
            "icon: paypal.svg",
            "payoutMethods[po_us_email_wallet].icon",
            "no icon file 'paypal.svg'",
            id="missing-icon",
        ),
        pytest.param(
            "{key: account, label: Wallet e-mail, required: true, type: email}",
            "{key: account, label: Wallet e-mail, required: true, type: mailbox}",
            "payoutMethods[po_us_email_wallet].recipientFields[1].type",
            "'mailbox' is not one of",
            id="unknown-field-type",
        ),
        pytest.param(
            "{key: account, label: Wallet e-mail, required: true, type: email}",
            "{key: account, label: Wallet e-mail, required: true, type: email, options: []}",
            "payoutMethods[po_us_email_wallet].recipientFields[1].options",
            "only select fields have options",
            id="options-on-a-text-field",
        ),
        pytest.param(
            "{field: account, value: rejected@wallet.example",
            "{field: iban, value: rejected@wallet.example",
            "payoutMethods[po_us_email_wallet].rejections[0].field",
            "'iban' is not one of",
            id="rejection-of-an-unknown-field",
        ),
        pytest.param(
            "  - id: sbx_po_pe_bank\n",
            "  - id: po_pe_bank_sandbox\n",
            "payoutMethods[po_pe_bank_sandbox].sandboxOnly",
            "sbx_po_* ids and only they",
            id="sandbox-only-without-sbx-id",
        ),
        pytest.param(
            '    paymentMethodId: "1001"\n  - id: dm_spei_alt',
            '    paymentMethodId: "1006"\n  - id: dm_spei_alt',
            "depositMethods[dm_spei_stp].paymentMethodId",
            "payment method 1006 settles in BRL, not MXN",
            id="deposit-method-in-another-currency",
        ),
        pytest.param(
            '    clabeBankCode: "646"',
            '    clabeBankCode: "64"',
            "depositMethods[dm_spei_stp].clabeBankCode",
            "does not match",
            id="bad-clabe-bank-code",
        ),
        pytest.param(
            "    bankName: STP\n",
            "    bankName: STP\n    colour: red\n",
            "depositMethods[dm_spei_stp]",
            "unknown key 'colour'",
            id="unknown-key",
        ),
    ],
)
def test_a_broken_payout_file_names_file_place_and_problem(
    copy_dir: Path, old: str, new: str, where: str, problem: str
) -> None:
    _edit(copy_dir, PAYOUT_METHODS_FILE, old, new)
    with pytest.raises(FixtureError) as caught:
        load_catalog(copy_dir)
    message = str(caught.value)
    assert message.startswith(str(copy_dir / PAYOUT_METHODS_FILE) + ": "), message
    assert where in message and problem in message, message


def test_a_shop_naming_an_unknown_deposit_method_blames_merchants_yaml(copy_dir: Path) -> None:
    _edit(copy_dir, "merchants.yaml", "depositMethods: [dm_spei_stp]", "depositMethods: [dm_nope]")
    with pytest.raises(FixtureError) as caught:
        load_catalog(copy_dir)
    message = str(caught.value)
    assert message.startswith(str(copy_dir / "merchants.yaml") + ": "), message
    assert "shops[shp_fiesta_taquilla].depositMethods" in message
    assert "unknown deposit method 'dm_nope'" in message
