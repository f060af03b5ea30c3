"""ISO-3166 country codes the API accepts, normalised to ISO-3."""

from __future__ import annotations

from simulator.domain.errors import invalid_request

ISO2_TO_ISO3: dict[str, str] = {
    "MX": "MEX", "BR": "BRA", "CO": "COL", "AR": "ARG", "CL": "CHL", "PE": "PER", "US": "USA",
    "EC": "ECU", "UY": "URY", "PY": "PRY", "BO": "BOL", "CR": "CRI", "GT": "GTM", "PA": "PAN",
    "DO": "DOM", "SV": "SLV", "HN": "HND", "NI": "NIC", "VE": "VEN", "CA": "CAN", "ES": "ESP",
    "GB": "GBR", "DE": "DEU", "FR": "FRA", "PT": "PRT", "IT": "ITA",
}  # fmt: skip
ISO3_TO_ISO2 = {iso3: iso2 for iso2, iso3 in ISO2_TO_ISO3.items()}


def normalize_country(value: object, *, param: str = "country") -> str:
    """ISO-2 or ISO-3 (any case) -> ISO-3; anything else is a 400 naming the field."""
    if isinstance(value, str):
        code = value.strip().upper()
        if code in ISO3_TO_ISO2:
            return code
        if code in ISO2_TO_ISO3:
            return ISO2_TO_ISO3[code]
    raise invalid_request(
        f"`{param}` must be an ISO-3166 alpha-2 or alpha-3 country code.",
        [{"path": param, "message": "unknown country code"}],
        param=param,
    )
