"""The business rules of a pay-in's charge: which method it charges, the amount's bounds, and the
buyer data the method needs. The request's shape is the OpenAPI validation's (see
`payins.request`); these rules read a typed request and the catalogue."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from simulator.domain.auth import Principal
from simulator.domain.cascade import cascade_exhausted
from simulator.domain.catalog import Catalog, PaymentMethod, RequiredField, Shop
from simulator.domain.documents import is_valid_document, is_valid_email
from simulator.domain.errors import ApiError
from simulator.domain.fx import Conversion, Fx
from simulator.domain.money import MAX_CHARGE_USD
from simulator.domain.payins.request import PaymentRequest

HALF_CENT = Decimal("0.005")

# How a missing hosted-checkout buyer field is named in `details.missingFields` (spec wording).
HOSTED_FIELDS = {
    "userName": ("userName", "string", "Full name", "The buyer's first and last name."),
    "userEmail": ("email", "email", "E-mail", "The buyer's e-mail address."),
    "documentId": ("documentId", "string", "Document", "The buyer's identity document."),
    "userPhone": ("userPhone", "string", "Phone", "Phone number with country code."),
}


def resolve_method(
    catalog: Catalog,
    principal: Principal,
    shop: Shop,
    request: PaymentRequest,
    country: str | None,
) -> PaymentMethod:
    """The method a request charges: by id, or by the legacy slug and the country."""
    if request.payment_method_id:
        method = catalog.methods.get(request.payment_method_id)
        usable = method is not None and (
            principal.environment == "sandbox" or not method.sandbox_only
        )
        if method is None or not usable:
            raise cascade_exhausted(
                request.payment_method_id, enabled_for_shop=False, known=method is not None
            )
        if not method.sandbox_only and method.id not in shop.enabled_method_ids:
            raise cascade_exhausted(method.id, enabled_for_shop=False)
        if country and not method.sandbox_only and country != method.country_iso3:
            raise ApiError(
                "unsupported_country",
                f"Method {method.id} ({method.name}) applies to {method.country_iso3}, "
                f"not {country}.",
                param="country",
                details={"paymentMethodId": method.id, "methodCountry": method.country_iso3},
            )
        return method
    slug = request.payment_method or ""
    target_country = country or "USA"
    # The slug picks from what GET /payment-methods lists for this shop: its catalog methods,
    # plus the sandbox built-ins in sandbox only (never in production, whatever the shop's
    # list holds), real methods first.
    pool = [
        catalog.methods[mid]
        for mid in shop.enabled_method_ids
        if mid in catalog.methods and not catalog.methods[mid].sandbox_only
    ]
    if principal.environment == "sandbox":
        pool += [m for m in catalog.methods.values() if m.sandbox_only]
    candidates = [m for m in pool if m.method == slug and m.routable]
    in_country = [m for m in candidates if m.country_iso3 == target_country]
    if in_country:
        return in_country[0]
    if candidates:
        raise ApiError(
            "unsupported_country",
            f"`{slug}` is not available in {target_country} for this shop.",
            param="country",
            details={"countries": sorted({m.country_iso3 for m in candidates})},
        )
    raise ApiError(
        "unsupported_method",
        f"`{slug}` is not a method enabled for this shop; use a paymentMethodId from "
        "GET /payment-methods.",
        param="paymentMethod",
    )


def check_buyer(request: PaymentRequest, method: PaymentMethod, country: str) -> None:
    """The buyer data the method (and the hosted flow) needs: present and well formed."""
    if not method.required_fields and not request.hosted_checkout:
        # Nothing is needed (most direct charges): only an e-mail sent must be one.
        if request.user_email and not is_valid_email(request.user_email):
            raise _invalid_email()
        return
    required = {field.key: field for field in method.required_fields}
    missing: list[dict[str, str]] = []
    malformed: list[dict[str, str]] = []
    needed = set(required)
    if request.hosted_checkout:
        needed |= {"userName", "userEmail", "documentId"}
    # A rail asking for the payer's name (boleto, wire) needs the full name, as checkout does.
    full_name = request.hosted_checkout or "userName" in required
    # A document the rail asks for is that rail's national id (a pix CPF stays a CPF when a
    # sandbox built-in is charged with another country); otherwise the buyer's country decides.
    document_country = method.country_iso3 if "documentId" in required else country
    checks = {
        "userName": lambda v: len(v.split()) >= 2 if full_name else True,
        "userEmail": is_valid_email,
        "documentId": lambda v: is_valid_document(document_country, v),
        "userPhone": lambda v: sum(c.isdigit() for c in v) >= 8,
    }
    values = {
        "userName": request.user_name,
        "userEmail": request.user_email,
        "documentId": request.document_id,
        "userPhone": request.user_phone,
    }
    for key in ("userName", "userEmail", "documentId", "userPhone"):
        value = values[key]
        if key in needed:
            if not value:
                missing.append(_field_item(key, required))
            elif not checks[key](value):
                malformed.append(_field_item(key, required))
        elif value and key == "userEmail" and not is_valid_email(value):
            raise _invalid_email()
    if missing or malformed:
        raise _missing_fields(method, missing, malformed)


def _field_item(key: str, required: dict[str, RequiredField]) -> dict[str, str]:
    """A buyer field as `details.missingFields` / `malformedFields` name it: as the rail
    describes it, else as the hosted flow does."""
    if key in required:
        field = required[key]
        name = "email" if key == "userEmail" else key
        return {"key": name, "type": field.type, "label": field.label, "help": field.help}
    name, kind, label, help_text = HOSTED_FIELDS[key]
    return {"key": name, "type": kind, "label": label, "help": help_text}


def _missing_fields(
    method: PaymentMethod, missing: list[dict[str, str]], malformed: list[dict[str, str]]
) -> ApiError:
    details: dict[str, Any] = {"reason": "missing" if missing else "malformed"}
    if missing:
        details["missingFields"] = missing
    if malformed:
        details["malformedFields"] = malformed
    names = ", ".join(i["key"] for i in missing + malformed)
    return ApiError(
        "missing_required_fields",
        f"{method.name} needs buyer data that is missing or malformed: {names}.",
        param=(missing + malformed)[0]["key"],
        details=details,
    )


def _invalid_email() -> ApiError:
    return ApiError(
        "invalid_request",
        "`userEmail` is not a valid e-mail address.",
        param="userEmail",
        details={"issues": [{"path": "userEmail", "message": "invalid e-mail"}]},
    )


def check_cap(headline: Decimal) -> None:
    """The 100,000 USD cap on the converted charge, checked before the headline is rounded
    (a huge amount such as 1e30 must be this 400, not a Decimal overflow while quantizing).
    Half a cent of slack keeps the rule "the amount rounded to cents is at most the cap"."""
    if headline >= MAX_CHARGE_USD + HALF_CENT:
        raise ApiError(
            "amount_above_maximum",
            "The converted charge is above the 100000 USD maximum.",
            param="amount",
            # A float never overflows, whatever magnitude was sent.
            details={"amountUsd": round(float(headline), 2), "maxUsd": MAX_CHARGE_USD},
        )


def check_limits(method: PaymentMethod, amount_usd: Decimal, local: Decimal) -> None:
    if method.min_tx_usd is not None and amount_usd < method.min_tx_usd:
        raise ApiError(
            "amount_below_minimum",
            f"{method.name} accepts at least {method.min_tx_usd} USD; got {amount_usd} USD.",
            param="amount",
            details={"minUsd": method.min_tx_usd, "amountUsd": amount_usd},
        )
    if method.max_tx_usd is not None and amount_usd > method.max_tx_usd:
        raise ApiError(
            "amount_above_maximum",
            f"{method.name} accepts at most {method.max_tx_usd} USD; got {amount_usd} USD.",
            param="amount",
            details={"maxUsd": method.max_tx_usd, "amountUsd": amount_usd},
        )
    limit = method.limit_for(method.local_currency)
    if limit is not None and not (limit.min <= local <= limit.max):
        bound = "min" if local < limit.min else "max"
        raise ApiError(
            "amount_out_of_limits",
            f"{local} {limit.currency} is outside {method.name}'s bounds "
            f"{limit.min}-{limit.max} {limit.currency}.",
            param="amount",
            details={
                "limit": {"min": limit.min, "max": limit.max, "currency": limit.currency},
                "boundViolated": bound,
                "amountLocal": local,
            },
        )


def check_amount(fx: Fx, method: PaymentMethod, amount: Decimal, currency: str) -> Conversion:
    """The amount bounds a charge applies, for callers that show choices before charging (the
    checkout grid greys out a method exactly when picking it would be refused)."""
    headline = fx.to_usd_headline(amount, currency)
    check_cap(headline)
    conversion = fx.convert(amount, currency, method.local_currency, headline)
    check_limits(method, conversion.amount_usd, conversion.amount_local)
    return conversion
