"""The OpenAPI 3.1 document: valid, complete (every route described, every path routed), served,
printed, and the single source of the request rules (the domain's own limits agree with it)."""

from __future__ import annotations

import json
import tomllib
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from openapi_spec_validator import validate
from typer.testing import CliRunner

from payorch.vocabulary import PAYMENT_METHOD_SLUGS
from payorch_cli.main import app
from simulator.domain import webhooks
from simulator.domain.checkout import request as checkout_request
from simulator.domain.deliveries import DELIVERY_STATUSES
from simulator.domain.deposits import request as deposit_request
from simulator.domain.errors import CATALOGUE
from simulator.domain.methods import CHANNELS
from simulator.domain.payins import request as payment_request
from simulator.domain.payins.refunds import MAX_REASON
from simulator.domain.payouts import service as payouts
from simulator.domain.ratelimit import TIER_QUOTAS
from simulator.domain.states import (
    PAYOUT_SIMULATE_ACTIONS,
    SIMULATE_ACTIONS,
    TRANSACTION_STATUSES,
)
from simulator.events.bus import API_VERSION
from simulator.openapi.document import ALWAYS_CODES, AUTH_CODES, document, load_source, operations
from tests.conftest import Api, Keys, assert_error

ROOT = Path(__file__).resolve().parents[2]
DOC = document()
SCHEMAS = DOC["components"]["schemas"]
HTTP_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}

# Routes the server answers that are not part of the API document: HTML pages for the buyer and
# the simulated provider, and static files. Listed here so a new API route cannot hide among them.
NON_API_ROUTES = {
    ("GET", "/"),  # the landing page (HTML for a browser, JSON otherwise)
    ("GET", "/checkout/{token}"),  # the hosted checkout method picker (HTML)
    ("POST", "/checkout/{token}/select"),  # its form post (HTML, 303)
    ("GET", "/c/{transaction_id}"),  # the payment page (HTML, or 307 to the provider)
    ("GET", "/c/{transaction_id}/status"),  # its status, polled by the page's script (JSON)
    ("GET", "/favicon.ico"),  # the pages' icon, for browsers that ask for it by that name
    ("GET", "/_sim/provider/{id}"),  # the simulated provider's hosted page (HTML)
    ("POST", "/_sim/provider/{id}/{action}"),  # its buttons (HTML, 303)
}


def documented_routes() -> dict[tuple[str, str], dict[str, Any]]:
    base = DOC["servers"][0]["url"]
    routes = {}
    for path, method, operation, item in operations(DOC):
        server = (item.get("servers") or [{"url": base}])[0]["url"]
        routes[(method.upper(), server.rstrip("/") + path)] = operation
    return routes


def served_routes(app: web.Application) -> dict[tuple[str, str], Any]:
    routes = {}
    for route in app.router.routes():
        resource = route.resource
        if route.method not in HTTP_METHODS or resource is None:
            continue  # HEAD is served for every GET by aiohttp itself
        if isinstance(resource, web.StaticResource):
            continue
        routes[(route.method, resource.canonical)] = route.handler
    return routes


def control_plane_aliases(routes: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any]:
    """The /api/v1/_sim/... routes (the control plane again under the API's base URL)."""
    return {key: handler for key, handler in routes.items() if key[1].startswith("/api/v1/_sim/")}


def test_the_document_is_valid_openapi_3_1() -> None:
    assert DOC["openapi"].startswith("3.1")
    validate(DOC)


def test_every_route_is_described_and_every_described_path_is_routed(api: Api) -> None:
    served = served_routes(api.client.app)
    aliases = control_plane_aliases(served)
    for (method, path), handler in aliases.items():
        assert served[(method, path.removeprefix("/api/v1"))] is handler, path
    served = {key: handler for key, handler in served.items() if key not in aliases}
    documented = documented_routes()
    undocumented = set(served) - set(documented) - NON_API_ROUTES
    assert not undocumented, f"routes missing from the OpenAPI document: {sorted(undocumented)}"
    unrouted = set(documented) - set(served)
    assert not unrouted, f"documented but not routed: {sorted(unrouted)}"
    assert set(served) >= NON_API_ROUTES, "a non-API route listed here no longer exists"


def test_each_operation_declares_the_credential_its_handler_requires(api: Api) -> None:
    served = served_routes(api.client.app)
    for key, operation in documented_routes().items():
        level = getattr(served[key], "auth_level", "none")
        declared = operation["x-auth"]
        # `token`: the session token in the path is the credential; no Authorization header.
        assert level == ("none" if declared == "token" else declared), (key, level, declared)
        anonymous = declared in ("none", "token")
        assert (operation.get("security") == []) is anonymous, key


def test_operation_ids_are_unique_and_links_name_real_operations() -> None:
    ids = [operation["operationId"] for _, _, operation, _ in operations(DOC)]
    assert len(ids) == len(set(ids))
    linked = 0
    for _, _, operation, _ in operations(DOC):
        for response in operation["responses"].values():
            for link in response.get("links", {}).values():
                assert link["operationId"] in ids, link
                linked += 1
    assert linked >= 20
    create = DOC["paths"]["/payments"]["post"]["responses"]["200"]["links"]
    assert {create[name]["operationId"] for name in create} == {
        "getPayment",
        "refundPayment",
        "simulatePayment",
    }


def test_error_responses_take_their_status_from_the_catalogue() -> None:
    """Each error response lists codes whose catalogue status is that response's status."""
    for path, method, operation, _ in operations(DOC):
        surface = operation.get("x-error-surface")
        seen: set[str] = set()
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            assert response["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorEnvelope"
            }
            codes = response["x-error-codes"]
            for code in codes:
                assert CATALOGUE[code].status_on(surface) == int(status), (path, method, code)
            assert HTTPStatus(int(status)).phrase in response["description"]
            seen.update(codes)
        assert set(ALWAYS_CODES) <= seen
        assert set(AUTH_CODES[operation["x-auth"]]) <= seen, (path, method)
        if "rate_limited" in seen:
            assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_every_error_response_shares_one_envelope_whose_code_enumerates_the_catalogue() -> None:
    code = SCHEMAS["ErrorEnvelope"]["properties"]["error"]["properties"]["code"]
    assert code["enum"] == list(CATALOGUE)
    inline = [
        (path, method, status)
        for path, method, operation, _ in operations(DOC)
        for status, response in operation["responses"].items()
        if int(status) >= 400
        and response["content"]["application/json"]["schema"].get("$ref") is None
    ]
    assert inline == []


def test_rate_limits_are_described_from_the_limiter() -> None:
    response = DOC["paths"]["/payments"]["post"]["responses"]["429"]
    assert response["headers"]["Retry-After"]["$ref"] == "#/components/headers/RetryAfter"
    for tier, quota in TIER_QUOTAS.items():
        assert (
            f"{tier} {quota.per_second:g} requests/s (bursts of {quota.burst:,})"
            in (response["description"])
        )
    assert "429" not in DOC["paths"]["/auth/token"]["post"]["responses"]  # no credential, no quota


def test_the_document_versions_with_the_api() -> None:
    assert DOC["info"]["version"] == API_VERSION
    assert DOC["servers"][0]["url"] == "/api/v1"


def test_the_source_writes_no_error_response_by_hand() -> None:
    for _, _, operation, _ in operations(load_source()):
        assert all(int(status) < 400 for status in operation["responses"]), operation["operationId"]


def test_amount_invalid_is_422_on_payouts_and_400_elsewhere() -> None:
    def status_of(path: str, method: str, code: str) -> int:
        for status, response in DOC["paths"][path][method]["responses"].items():
            if code in response.get("x-error-codes", ()):
                return int(status)
        raise AssertionError((path, method, code))

    assert status_of("/me/payout/send", "post", "amount_invalid") == 422
    assert status_of("/payments", "post", "amount_invalid") == 400


async def test_the_document_is_served_without_credentials(api: Api) -> None:
    response = await api.client.get("/api/v1/openapi.json")
    assert response.status == 200
    assert response.content_type == "application/json"
    assert response.headers["X-Request-Id"].startswith("req_")
    assert await response.json() == json.loads(json.dumps(DOC))


def test_payorch_openapi_prints_the_document() -> None:
    result = CliRunner().invoke(app, ["openapi"])  # without aiohttp: see tests/unit/test_layering
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json.dumps(DOC))


def test_the_document_ships_as_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["simulator"]
    source = ROOT / "simulator" / "openapi" / "openapi.yaml"
    assert any(source.match(f"simulator/{pattern}") for pattern in patterns)


# -- one source: the domain's own rules agree with the document ------------------------------


def props(name: str) -> dict[str, Any]:
    return SCHEMAS[name]["properties"]


def test_payment_text_limits_match_the_domain() -> None:
    schema = props("PaymentCreate")
    # A one-shot checkout session's body goes through the same parser as POST /payments.
    one_shot = props("OneShotSessionCreate")
    for field, limit in payment_request.MAX_LENGTHS.items():
        assert schema[field]["maxLength"] == limit, field
        assert one_shot[field]["maxLength"] == limit, field
    assert set(schema) == payment_request.ALLOWED_FIELDS
    assert set(props("PaymentCustomer")) == payment_request.CUSTOMER_FIELDS


def test_checkout_limits_match_the_domain() -> None:
    customer = SCHEMAS["CheckoutCustomer"]
    for field, (required, limit) in checkout_request.CUSTOMER_RULES.items():
        assert customer["properties"][field]["maxLength"] == limit, field
        assert (field in customer["required"]) is required, field
    assert set(props("SelectorSessionCreate")) == checkout_request.SESSION_FIELDS
    select = props("SelectRequest")
    assert set(select) == checkout_request.SELECT_FIELDS
    for field, limit in checkout_request.SELECT_CUSTOMER_RULES.items():
        assert select["customer"]["properties"][field]["maxLength"] == limit, field
    # details.helpUrl points at operations of this document.
    for pointer in (checkout_request.CREATE_HELP, checkout_request.SELECT_HELP):
        path, method = pointer.split("#/paths/")[1].rsplit("/", 1)
        assert method in DOC["paths"][path.replace("~1", "/")]


def test_deposit_account_limits_match_the_domain() -> None:
    schema = props("DepositAccountCreate")
    for field, limit in deposit_request.TEXT_LIMITS.items():
        assert schema[field]["maxLength"] == limit, field
    assert set(schema) == set(deposit_request.ACCOUNT_FIELDS)
    assert schema["metadata"]["maxProperties"] == deposit_request.METADATA_MAX_KEYS
    assert (
        schema["metadata"]["additionalProperties"]["maxLength"]
        == deposit_request.METADATA_MAX_VALUE
    )
    assert schema["metadata"]["propertyNames"]["maxLength"] == deposit_request.METADATA_MAX_KEY


def test_enumerations_match_the_domain() -> None:
    assert props("SimulateRequest")["action"]["enum"] == list(SIMULATE_ACTIONS)
    assert props("PayoutSimulateRequest")["action"]["enum"] == list(PAYOUT_SIMULATE_ACTIONS)
    assert SCHEMAS["EventType"]["enum"] == list(webhooks.EVENT_TYPES)
    assert props("PaymentData")["method"]["enum"] == list(PAYMENT_METHOD_SLUGS)
    events = SCHEMAS["Events"]["oneOf"][0]["items"]["enum"]
    assert events == [webhooks.ALL_EVENTS, *webhooks.EVENT_TYPES]
    listed = {p["name"]: p for p in DOC["paths"]["/payments"]["get"]["parameters"] if "name" in p}
    assert listed["status"]["schema"]["enum"] == list(TRANSACTION_STATUSES)
    methods = DOC["paths"]["/payment-methods"]["get"]["parameters"]
    assert next(p for p in methods if p["name"] == "channel")["schema"]["enum"] == list(CHANNELS)
    deliveries = DOC["paths"]["/webhooks/{id}/deliveries"]["get"]["parameters"]
    status = next(p for p in deliveries if p.get("name") == "status")
    assert status["schema"]["enum"] == list(DELIVERY_STATUSES)
    payout_list = DOC["paths"]["/me/payout/send"]["get"]["parameters"]
    status = next(p for p in payout_list if p.get("name") == "status")
    assert status["schema"]["enum"] == list(payouts.PAYOUT_STATUSES)
    assert props("RefundRequest")["reason"]["maxLength"] == MAX_REASON
    assert props("WebhookCreate")["description"]["maxLength"] == webhooks.MAX_DESCRIPTION
    assert SCHEMAS["WebhookUrl"]["maxLength"] == webhooks.MAX_URL


# -- the schemas are what the server enforces ----------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "status", "code", "param"),
    [
        ("/payments", {"paymentMethodId": "1001"}, 400, "missing_field", "amount"),
        ("/payments", {"amount": "50", "paymentMethodId": "1001"}, 400, "amount_invalid", "amount"),
        ("/payments", {"amount": 5, "paymentMethodId": "1001", "tag1": 7}, 400, "invalid_request",
         "tag1"),
        ("/me/payout/fund-sandbox", {"currency": "MXN", "amount": -1}, 422, "amount_invalid",
         "amount"),
        ("/me/payout/fund-sandbox", {"amount": 10}, 400, "missing_field", "currency"),
        ("/webhooks", {"events": ["payment.completed", "nope"]}, 400, "invalid_request",
         "events"),
        ("/me/deposit-accounts", {"name": "Ana"}, 400, "invalid_request", "endUserRef"),
    ],
)  # fmt: skip
async def test_violations_map_to_the_spec_codes(
    api: Api, keys: Keys, path: str, body: dict[str, Any], status: int, code: str, param: str
) -> None:
    got, out, _ = await api.post(path, keys.sandbox_sk, json=body)
    error = assert_error(got, out, status, code)
    assert error["param"] == param


async def test_issues_name_every_problem_with_its_path(api: Api, keys: Keys) -> None:
    body = {"amount": 5, "paymentMethodId": "1001", "colour": "red", "tag2": "x" * 201}
    status, out, _ = await api.post("/payments", keys.sandbox_sk, json=body)
    issues = assert_error(status, out, 400, "invalid_request")["details"]["issues"]
    assert {"path": "colour", "message": "unknown field"} in issues
    assert {"path": "tag2", "message": "at most 200 characters"} in issues


async def test_query_parameters_are_checked_against_the_document(api: Api, keys: Keys) -> None:
    status, out, _ = await api.get("/payments?status=settled", keys.sandbox_sk)
    assert assert_error(status, out, 400, "invalid_request")["param"] == "status"
    status, out, _ = await api.get("/payments?limit=1_0", keys.sandbox_sk)
    assert assert_error(status, out, 400, "invalid_request")["param"] == "limit"
    # An empty value is a value: not an integer, not one of an enum (only omission is absent).
    status, out, _ = await api.get("/webhooks?limit=&offset=", keys.sandbox_sk)
    assert assert_error(status, out, 400, "invalid_request")["param"] == "limit"
    status, out, _ = await api.get("/payments?status=", keys.sandbox_sk)
    assert assert_error(status, out, 400, "invalid_request")["param"] == "status"
    status, out, _ = await api.get("/payments?merchantOrderId=", keys.sandbox_sk)
    assert status == 200, out  # free text: empty filters nothing, as before


async def test_a_null_optional_field_is_an_absent_one(api: Api, keys: Keys) -> None:
    body = {"amount": 5, "paymentMethodId": "1001", "tag1": None, "customer": None}
    status, out, _ = await api.post("/payments", keys.sandbox_sk, json=body)
    assert status == 200, out


def _country_fields(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = [node] if node.get("x-country-code") else []
        return found + [f for value in node.values() for f in _country_fields(value)]
    if isinstance(node, list):
        return [f for value in node for f in _country_fields(value)]
    return []


def test_country_codes_are_the_server_table() -> None:
    """Every country field enumerates simulator.domain.countries, and its pattern takes exactly
    those codes (any case, padded), as normalize_country does: the builder derives both."""
    import re

    from simulator.domain.countries import ISO2_TO_ISO3, normalize_country

    fields = _country_fields(document())
    assert len(fields) >= 5  # CountryCode and the four body fields
    codes = {*ISO2_TO_ISO3, *ISO2_TO_ISO3.values()}
    for schema in fields:
        assert set(schema["x-enum"]) == codes
        pattern = re.compile(schema["pattern"])
        for code in codes:
            for written in (code, code.lower(), f" {code.title()} "):
                assert pattern.search(written), written
                assert normalize_country(written) in ISO2_TO_ISO3.values()
        for other in ("AA", "XYZ", "M X", "MXN", "", "U"):
            assert not pattern.search(other), other


def test_include_takes_the_handler_values() -> None:
    import re

    from simulator.http.handlers.deposits import INCLUDES

    schema = document()["components"]["parameters"]["IncludeStats"]["schema"]
    assert tuple(schema["x-enum"]) == INCLUDES
    pattern = re.compile(schema["pattern"])
    for good in ("", "stats", "stats,stats", " , stats , "):
        assert pattern.search(good), good
    for bad in ("stat", "statsstats", "stats,x", "a"):
        assert not pattern.search(bad), bad


def test_a_vocabulary_the_document_names_must_exist() -> None:
    from simulator.openapi.document import DocumentError, build

    source = load_source()
    source["components"]["schemas"]["EventType"]["x-vocabulary"] = "EVENT_TYPOS"
    with pytest.raises(DocumentError, match="EVENT_TYPOS"):
        build(source)
