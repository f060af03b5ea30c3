"""payout_methods.yaml: the payout methods (rails, recipient forms, simulated rejections) and the
deposit methods (incoming-transfer accounts) shops may offer."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from simulator.domain.catalog import (
    PAYOUT_RAILS,
    RECIPIENT_FIELD_TYPES,
    DepositMethod,
    FieldOption,
    FxTable,
    PaymentMethod,
    PayoutMethod,
    PayoutRejection,
    RecipientField,
)
from simulator.domain.countries import ISO2_TO_ISO3
from simulator.fixture_loader.fields import Fields, FixtureError, entries, unique_id
from simulator.fixture_loader.files import FX_FILE, ICON_NAME, METHODS_FILE, has_icon
from simulator.fixture_loader.fx import CURRENCY
from simulator.fixture_loader.payment_methods import METHOD_ID
from simulator.fixture_loader.providers import METHOD_SLUGS

DEPOSIT_METHOD_ID = re.compile(r"dm_[a-z0-9_]+")
_PAYOUT_METHOD_ID = re.compile(r"(sbx_)?po_[a-z0-9_]+")
_FIELD_KEY = re.compile(r"[a-z][A-Za-z0-9]*")

_PAYOUT_REQUIRED = (
    "id",
    "name",
    "rail",
    "country",
    "currency",
    "minUsd",
    "maxUsd",
    "icon",
    "recipientFields",
)
_PAYOUT_OPTIONAL = ("sandboxOnly", "rejections")
_DEPOSIT_REQUIRED = (
    "id",
    "method",
    "name",
    "country",
    "currency",
    "clabeBankCode",
    "bankName",
    "paymentMethodId",
)


def load(
    file: str, data: Any, fx: FxTable, methods: dict[str, PaymentMethod]
) -> tuple[dict[str, PayoutMethod], dict[str, DepositMethod]]:
    # `x-fields` holds YAML anchors shared by several methods; the loader ignores it.
    top = Fields(
        file, "(top level)", data, ["payoutMethods", "depositMethods"], optional=["x-fields"]
    )
    payout_methods: dict[str, PayoutMethod] = {}
    for where, raw in entries(file, {"payoutMethods": top.raw("payoutMethods")}, "payoutMethods"):
        method = _load_payout_method(
            Fields(file, where, raw, _PAYOUT_REQUIRED, _PAYOUT_OPTIONAL), fx
        )
        if method.id in payout_methods:
            raise FixtureError(file, f"{where}.id", f"duplicate id {method.id!r}")
        payout_methods[method.id] = method
    deposit_methods: dict[str, DepositMethod] = {}
    for where, raw in entries(
        file, {"depositMethods": top.raw("depositMethods")}, "depositMethods"
    ):
        f = Fields(file, where, raw, _DEPOSIT_REQUIRED)
        ident = f.text("id", DEPOSIT_METHOD_ID)
        unique_id(f, ident, deposit_methods)
        currency = f.text("currency", CURRENCY)
        if currency not in fx.usd_rates:
            f.fail(f"{currency} has no rate in {FX_FILE}", "currency")
        pay_in_id = f.text("paymentMethodId", METHOD_ID, id_like=True)
        pay_in = methods.get(pay_in_id)
        if pay_in is None or pay_in.sandbox_only:
            f.fail(
                f"unknown payment method {pay_in_id!r} (not in {METHODS_FILE})", "paymentMethodId"
            )
        if pay_in.local_currency != currency:
            f.fail(
                f"payment method {pay_in_id} settles in {pay_in.local_currency}, not {currency}",
                "paymentMethodId",
            )
        deposit_methods[ident] = DepositMethod(
            id=ident,
            method=f.choice("method", sorted(METHOD_SLUGS)),
            name=f.text("name"),
            country=_iso2(f),
            currency=currency,
            clabe_bank_code=f.text("clabeBankCode", re.compile(r"\d{3}"), id_like=True),
            bank_name=f.opt_text("bankName"),
            payment_method_id=pay_in_id,
        )
    return payout_methods, deposit_methods


def _iso2(f: Fields) -> str:
    country = f.text("country", re.compile(r"[A-Z]{2}"))
    if country not in ISO2_TO_ISO3:
        f.fail(f"{country!r} is not a country the API knows", "country")
    return country


def _load_payout_method(f: Fields, fx: FxTable) -> PayoutMethod:
    ident = f.text("id", _PAYOUT_METHOD_ID)
    sandbox_only = f.boolean("sandboxOnly", False)
    if ident.startswith("sbx_") != sandbox_only:
        f.fail("sbx_po_* ids and only they must say sandboxOnly: true", "sandboxOnly")
    country = _iso2(f)
    currency = f.text("currency", CURRENCY)
    if currency not in fx.usd_rates:
        f.fail(f"{currency} has no rate in {FX_FILE}", "currency")
    min_usd = f.decimal("minUsd", Decimal(0))
    max_usd = f.decimal("maxUsd", Decimal(0))
    if min_usd > max_usd:
        f.fail(f"minUsd {min_usd} is above maxUsd {max_usd}", "maxUsd")
    icon = f.text("icon", ICON_NAME)
    if not has_icon(icon):
        f.fail(f"no icon file {icon!r} in simulator/static/icons", "icon")
    fields = _load_recipient_fields(f)
    rejections: list[PayoutRejection] = []
    for i, raw in enumerate(f.items("rejections", default=[])):
        item = Fields(
            f.file, f"{f.at('rejections')}[{i}]", raw, ["field", "value", "failureReason"]
        )
        key = item.choice("field", [field.key for field in fields])
        rejections.append(
            PayoutRejection(
                field=key,
                value=item.text("value", id_like=True),
                failure_reason=item.text("failureReason", re.compile(r"[a-z][a-z0-9_]*")),
            )
        )
    # A synthetic rail has no provider, so nothing could ever reject it.
    if sandbox_only and rejections:
        f.fail("a synthetic sbx_po_* method has no provider to reject", "rejections")
    return PayoutMethod(
        id=ident,
        name=f.text("name"),
        rail=f.choice("rail", PAYOUT_RAILS),
        country=country,
        country_iso3=ISO2_TO_ISO3[country],
        currency=currency,
        min_usd=min_usd,
        max_usd=max_usd,
        icon=icon,
        recipient_fields=fields,
        rejections=tuple(rejections),
        sandbox_only=sandbox_only,
    )


def _load_recipient_fields(f: Fields) -> tuple[RecipientField, ...]:
    fields: list[RecipientField] = []
    for i, raw in enumerate(f.items("recipientFields")):
        item = Fields(
            f.file,
            f"{f.at('recipientFields')}[{i}]",
            raw,
            ["key", "label", "required", "type"],
            optional=["options"],
        )
        key = item.text("key", _FIELD_KEY)
        if any(field.key == key for field in fields):
            item.fail(f"{key} listed twice", "key")
        kind = item.choice("type", RECIPIENT_FIELD_TYPES)
        options: tuple[FieldOption, ...] | None = None
        if kind == "select":
            options = _load_options(item)
        elif item.has("options"):
            item.fail("only select fields have options", "options")
        fields.append(
            RecipientField(
                key=key,
                label=item.text("label"),
                required=item.boolean("required"),
                type=kind,
                options=options,
            )
        )
    keys = {field.key for field in fields}
    if not {"name", "account"} <= keys:
        f.fail("every payout method asks for `name` and `account`", "recipientFields")
    return tuple(fields)


def _load_options(item: Fields) -> tuple[FieldOption, ...]:
    options: list[FieldOption] = []
    for j, raw in enumerate(item.items("options", default=[])):
        option = Fields(item.file, f"{item.at('options')}[{j}]", raw, ["value", "label"])
        value = option.text("value", id_like=True)
        if any(o.value == value for o in options):
            option.fail(f"{value!r} listed twice", "value")
        options.append(FieldOption(value=value, label=option.text("label")))
    if not options:
        item.fail("a select field needs at least one option", "options")
    return tuple(options)
