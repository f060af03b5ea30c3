"""The built-in fixtures hold every property the design contract and the scenarios rely on, and the
loader names file, place and problem when a user's copy is broken."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from decimal import Decimal
from importlib import resources
from pathlib import Path

import pytest
import yaml

from simulator.domain.catalog import Catalog, PaymentMethod
from simulator.domain.methods import CHANNELS
from simulator.domain.views import icon_path
from simulator.fixture_loader import (
    FIXTURE_FILES,
    FixtureError,
    builtin_fixtures_dir,
    load_catalog,
    static_dir,
)

KEY = re.compile(r"(pk|sk)_(test|live)_[a-z0-9]{24}")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _raw_method_ids() -> list[str]:
    text = (builtin_fixtures_dir() / "payment_methods.yaml").read_text(encoding="utf-8")
    return [str(entry["id"]) for entry in yaml.safe_load(text)["paymentMethods"]]


def _production_methods(catalog: Catalog) -> list[PaymentMethod]:
    return [method for method in catalog.methods.values() if not method.sandbox_only]


def _active_shop_ids_enabling(catalog: Catalog, method_id: str) -> list[str]:
    return [
        shop.id
        for merchant in catalog.merchants.values()
        if not merchant.suspended
        for shop in merchant.shops
        if not shop.suspended and method_id in shop.enabled_method_ids
    ]


# ---------------------------------------------------------------------------- merchants and keys


def test_builtin_catalog_loads(catalog: Catalog) -> None:
    assert len(catalog.merchants) >= 5
    assert catalog.methods and catalog.providers and catalog.credentials


def test_every_tier_is_present(catalog: Catalog) -> None:
    assert {m.tier for m in catalog.merchants.values()} == {"starter", "standard", "premium"}


def test_tier_terms_are_decimals_built_from_strings(catalog: Catalog) -> None:
    by_tier = {m.tier: m for m in catalog.merchants.values()}
    assert by_tier["premium"].rolling_reserve_pct == Decimal("2.5")
    assert by_tier["starter"].settlement_delay_days == 3
    for merchant in catalog.merchants.values():
        assert isinstance(merchant.withdrawal_fee_usd, Decimal)
        assert 0 <= merchant.trust_score <= 1000


def test_two_merchants_have_a_shop_with_sandbox_and_production_pairs(catalog: Catalog) -> None:
    merchants = {
        merchant.id
        for merchant in catalog.merchants.values()
        if not merchant.suspended
        for shop in merchant.shops
        if not shop.suspended
        and shop.promoted_to is None
        and {pair.environment for pair in shop.keys if pair.publishable}
        == {
            "sandbox",
            "production",
        }
    }
    assert len(merchants) >= 2


def test_one_merchant_wide_legacy_sandbox_secret(catalog: Catalog) -> None:
    legacy = [c for c in catalog.credentials if c.shop is None]
    assert len(legacy) >= 1
    assert any(c.environment == "sandbox" and c.secret.startswith("sk_test_") for c in legacy)
    assert all(c.publishable is None for c in legacy)


def test_suspended_merchant_has_a_shop_with_keys(catalog: Catalog) -> None:
    suspended = [m for m in catalog.merchants.values() if m.suspended]
    assert len(suspended) == 1
    assert any(shop.keys for shop in suspended[0].shops)


def test_suspended_shop_in_an_active_merchant_has_keys(catalog: Catalog) -> None:
    shops = [
        shop
        for merchant in catalog.merchants.values()
        if not merchant.suspended
        for shop in merchant.shops
        if shop.suspended
    ]
    assert shops and all(shop.keys for shop in shops)


def test_a_shop_promoted_to_production_keeps_sandbox_keys(catalog: Catalog) -> None:
    promoted = [shop for shop in catalog.shops.values() if shop.promoted_to == "production"]
    assert promoted
    assert any(pair.environment == "sandbox" for pair in promoted[0].keys)


def test_keys_have_prefix_of_their_environment_and_are_unique(catalog: Catalog) -> None:
    seen: list[str] = []
    for credential in catalog.credentials:
        test_or_live = "test" if credential.environment == "sandbox" else "live"
        assert KEY.fullmatch(credential.secret)
        assert credential.secret.startswith(f"sk_{test_or_live}_")
        seen.append(credential.secret)
        if credential.publishable is not None:
            assert KEY.fullmatch(credential.publishable)
            assert credential.publishable.startswith(f"pk_{test_or_live}_")
            seen.append(credential.publishable)
    assert len(seen) == len(set(seen))
    assert len(catalog.by_secret) == len(catalog.credentials)


def test_a_shop_has_a_restricted_method_list(catalog: Catalog) -> None:
    production_ids = {m.id for m in _production_methods(catalog)}
    restricted = [
        s for s in catalog.shops.values() if not production_ids <= set(s.enabled_method_ids)
    ]
    assert restricted
    for shop in catalog.shops.values():
        assert set(shop.enabled_method_ids) <= set(catalog.methods)


def test_deposit_setups_cover_none_one_and_two_methods(catalog: Catalog) -> None:
    counts = {len(shop.deposit_method_ids) for shop in catalog.shops.values()}
    assert {0, 1, 2} <= counts
    assert any("phone" in shop.required_deposit_fields for shop in catalog.shops.values())


# ---------------------------------------------------------------------------- payment methods


def test_catalog_covers_the_seven_countries(catalog: Catalog) -> None:
    countries = {m.country_iso3 for m in _production_methods(catalog)}
    assert countries == {"MEX", "BRA", "COL", "ARG", "CHL", "PER", "USA"}


def test_method_ids_are_four_digits_from_1001_and_unique() -> None:
    ids = _raw_method_ids()
    assert len(ids) == len(set(ids))
    numeric = [int(i) for i in ids if not i.startswith("sbx_")]
    assert all(re.fullmatch(r"\d{4}", i) for i in ids if not i.startswith("sbx_"))
    assert min(numeric) == 1001


def test_every_channel_and_slug_is_used(catalog: Catalog) -> None:
    methods = _production_methods(catalog)
    assert {m.channel for m in methods} == {"ONLINE", "CASH", "CREDIT_CARD"}
    assert {"spei", "oxxo", "voucher", "pix", "boleto", "bank_transfer", "card", "debit"} | {
        "wire",
        "online_payment",
        "applepay",
        "googlepay",
        "crypto",
    } <= {m.method for m in methods}


def test_flows_follow_the_rail(catalog: Catalog) -> None:
    for method in catalog.methods.values():
        if method.method in {"spei", "oxxo", "voucher", "pix", "boleto", "wire"}:
            assert method.flow == "direct", method.id
        if method.method in {"card", "debit", "applepay", "googlepay", "online_payment"}:
            assert method.flow == "hosted", method.id
    pse = next(m for m in catalog.methods.values() if m.name == "PSE")
    assert pse.flow == "hosted"
    assert {f.key for f in pse.required_fields} == {"documentId", "userPhone"}


def test_local_currency_first_with_a_limit_and_rate_each(catalog: Catalog) -> None:
    local = {"MEX": "MXN", "BRA": "BRL", "COL": "COP", "ARG": "ARS", "CHL": "CLP"} | {
        "PER": "PEN",
        "USA": "USD",
    }
    for method in catalog.methods.values():
        assert method.local_currency == local[method.country_iso3], method.id
        for currency in method.currencies:
            limit = method.limit_for(currency)
            assert limit is not None and limit.min <= limit.max
            assert currency in catalog.fx.usd_rates and currency in catalog.fx.decimals
    assert any(m.min_tx_usd is None for m in catalog.methods.values())


def test_some_methods_are_unroutable_with_a_reason(catalog: Catalog) -> None:
    unroutable = [m for m in catalog.methods.values() if not m.routable]
    assert 2 <= len(unroutable) <= 4
    assert all(m.unroutable_reason for m in unroutable)
    assert all(m.unroutable_reason is None for m in catalog.methods.values() if m.routable)


def test_sandbox_builtins_of_the_spec(catalog: Catalog) -> None:
    expected = {
        "sbx_pix": ("pix", "BRA", "ONLINE"),
        "sbx_spei": ("spei", "MEX", "ONLINE"),
        "sbx_pse": ("bank_transfer", "COL", "ONLINE"),
        "sbx_card": ("card", "USA", "CREDIT_CARD"),
        "sbx_cash": ("oxxo", "MEX", "CASH"),
    }
    sandbox = {m.id: m for m in catalog.methods.values() if m.sandbox_only}
    assert set(sandbox) == set(expected)
    for ident, (slug, country, channel) in expected.items():
        method = sandbox[ident]
        assert (method.method, method.country_iso3, method.channel) == (slug, country, channel)
        assert method.routable
    assert sandbox["sbx_pse"].flow == "hosted" and sandbox["sbx_card"].flow == "hosted"


def test_every_icon_exists_and_is_a_64px_svg(catalog: Catalog) -> None:
    methods = list(catalog.methods.values())
    # The category icons too: a logo-less method of each channel shows its channel's.
    methods += [replace(methods[0], icon=None, channel=c) for c in CHANNELS]
    assert any(method.icon is None for method in catalog.methods.values())
    for path in {icon_path(method) for method in methods}:
        root = ET.parse(static_dir() / path.removeprefix("/static/")).getroot()
        assert root.tag.endswith("svg") and root.get("viewBox") == "0 0 64 64", path


# ---------------------------------------------------------------------------- production cascade


def test_first_provider_in_outage_then_an_accepting_one(catalog: Catalog) -> None:
    def falls_through(method: PaymentMethod) -> bool:
        behaviours = [catalog.providers[p].behaviour for p in method.provider_ids]
        return len(behaviours) >= 2 and behaviours[0] == "outage" and "accept" in behaviours[1:]

    assert any(falls_through(m) for m in _production_methods(catalog) if m.routable)


def test_a_routable_method_whose_every_provider_declines(catalog: Catalog) -> None:
    exhausted = [
        m
        for m in _production_methods(catalog)
        if m.routable
        and m.provider_ids
        and all(catalog.providers[p].behaviour == "decline" for p in m.provider_ids)
    ]
    assert exhausted and _active_shop_ids_enabling(catalog, exhausted[0].id)
    assert catalog.providers[exhausted[0].provider_ids[0]].decline_reason


def test_a_method_whose_provider_returns_no_instructions(catalog: Catalog) -> None:
    assert any(
        [catalog.providers[p].behaviour for p in m.provider_ids] == ["no_instructions"]
        for m in _production_methods(catalog)
        if m.routable
    )


def test_an_enabled_unroutable_method_with_no_provider(catalog: Catalog) -> None:
    orphans = [m for m in _production_methods(catalog) if not m.routable and not m.provider_ids]
    assert orphans and orphans[0].enabled
    assert _active_shop_ids_enabling(catalog, orphans[0].id)


def test_providers_callbacks(catalog: Catalog) -> None:
    used = {p for m in _production_methods(catalog) for p in m.provider_ids}
    silent = [p for p in used if catalog.providers[p].callback_after_seconds is None]
    assert silent, "a provider that never calls back, so only the reconciliation poll settles"
    assert any(catalog.providers[p].callback_outcome == "failed" for p in used)


def test_fx_table(catalog: Catalog) -> None:
    fx = catalog.fx
    assert fx.markup_pct == Decimal("2.0")
    assert fx.usd_rates["USD"] == 1 and fx.decimals["CLP"] == 0 and fx.decimals["COP"] == 2
    assert {"MXN", "BRL", "COP", "ARS", "CLP", "PEN", "EUR", "GBP", "CAD"} <= set(fx.usd_rates)
    assert "JPY" not in fx.usd_rates
    assert all(isinstance(rate, Decimal) for rate in fx.usd_rates.values())


# ---------------------------------------------------------------------------- user copies


@pytest.fixture
def copy_dir(tmp_path: Path) -> Path:
    # What a user does to start a custom set: copy the built-in directory wholesale.
    target = tmp_path / "fixtures"
    with resources.as_file(builtin_fixtures_dir()) as source:
        shutil.copytree(source, target)
    assert {p.name for p in target.iterdir()} >= set(FIXTURE_FILES)
    return target


def _edit(directory: Path, name: str, old: str, new: str) -> None:
    path = directory / name
    text = path.read_text(encoding="utf-8")
    assert old in text, f"test setup: {old!r} not in {name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_an_unchanged_copy_loads_the_same_catalog(copy_dir: Path, catalog: Catalog) -> None:
    copied = load_catalog(copy_dir)
    assert copied.methods == catalog.methods
    assert copied.merchants == catalog.merchants


@pytest.mark.parametrize(
    ("name", "old", "new", "where", "problem"),
    [
        pytest.param(
            "merchants.yaml",
            "secret: sk_live_lvuyxno67qob31r1gq32rfwr",
            "secret: sk_test_lvuyxno67qob31r1gq32rfwr",
            "merchants[mer_mercadoazul].shops[shp_mazul_tienda].keys.production.secret",
            "must start with 'sk_live_'",
            id="bad-key-prefix",
        ),
        pytest.param(
            "merchants.yaml",
            '"1025", sbx_pix',
            '"1025", "4242", sbx_pix',
            "merchants[mer_lojaverde].shops[shp_lverde_loja].enabledMethods",
            "unknown payment method '4242'",
            id="shop-method-unknown",
        ),
        pytest.param(
            "merchants.yaml",
            "secret: sk_test_xzy14ho7xs40lftvqbb4y84q",
            "secret: sk_test_19g744zrbw5buqxqpxp5w4gj",
            "merchants[mer_lojaverde].shops[shp_lverde_loja].keys.sandbox.secret",
            "key already used",
            id="duplicate-key",
        ),
        pytest.param(
            "payment_methods.yaml",
            'id: "1002"',
            'id: "1001"',
            "paymentMethods[1001].id",
            "duplicate id '1001'",
            id="duplicate-method-id",
        ),
        pytest.param(
            "payment_methods.yaml",
            "providers: [prv_stp_mx]",
            "providers: [prv_nowhere]",
            "paymentMethods[1001].providers",
            "unknown provider 'prv_nowhere'",
            id="unknown-provider",
        ),
        pytest.param(
            "fx.yaml",
            '  PEN: "3.72"\n',
            "",
            "fx.yaml: decimals",
            "has decimals but no rate",
            id="currency-without-rate",
        ),
        pytest.param(
            "providers.yaml",
            "    behaviour: no_instructions\n",
            "    behaviour: no_instructions\n    colour: red\n",
            "providers[prv_pagoefectivo_pe]",
            "unknown key 'colour'",
            id="unknown-key",
        ),
        pytest.param(
            "providers.yaml",
            "    name: Andes Acquiring\n",
            "",
            "providers[prv_andes_acquiring]",
            "missing key 'name'",
            id="missing-key",
        ),
        pytest.param(
            "merchants.yaml",
            "    industry: software\n",
            "    industry: software\n    industry: saas\n",
            "line ",
            "duplicate key 'industry'",
            id="duplicate-yaml-key",
        ),
    ],
)
def test_a_broken_copy_names_file_place_and_problem(
    copy_dir: Path, name: str, old: str, new: str, where: str, problem: str
) -> None:
    _edit(copy_dir, name, old, new)
    with pytest.raises(FixtureError) as caught:
        load_catalog(copy_dir)
    message = str(caught.value)
    assert message.startswith(str(copy_dir / name) + ": "), message
    assert where in message and problem in message, message


def test_a_rate_removed_from_both_maps_blames_the_method(copy_dir: Path) -> None:
    _edit(copy_dir, "fx.yaml", '  PEN: "3.72"\n', "")
    _edit(copy_dir, "fx.yaml", "  PEN: 2\n", "")
    with pytest.raises(FixtureError, match=r"payment_methods\.yaml: paymentMethods\[1021\]"):
        load_catalog(copy_dir)


def test_a_missing_file_is_named(copy_dir: Path) -> None:
    (copy_dir / "providers.yaml").unlink()
    with pytest.raises(FixtureError, match=r"providers\.yaml: file: missing"):
        load_catalog(copy_dir)


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(FixtureError, match="not found"):
        load_catalog(tmp_path / "nowhere")


def test_an_extra_icon_file_name_must_exist(copy_dir: Path) -> None:
    _edit(copy_dir, "payment_methods.yaml", "icon: spei.svg", "icon: spei-new.svg")
    with pytest.raises(FixtureError, match=r"no icon file 'spei-new\.svg'"):
        load_catalog(copy_dir)
