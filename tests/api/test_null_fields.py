"""Null on an optional field is an absent field, on every request body of the document.

The document's convention (the header of openapi.yaml and its `info.description`): optional
properties are written nullable and `null` means "absent". This walks every request schema of
the served document, finds each optional property (nested ones too), and sends each operation
twice per property, once without it and once with it `null`, against real resources: both must
get the same answer. A property typed non-nullable is only allowed with `x-null-is-absent: false`.
(PATCH /webhooks/{id} gives null a meaning on `url` and `description`, as the spec does: the
managed inbox, no description; the answer is still the same 200.)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from simulator.openapi.document import document, operations
from tests.api.webhook_receiver import paid_payment
from tests.conftest import KEYS, Api

DAY = 86_400

DOC = document()
SCHEMAS = DOC["components"]["schemas"]
_unique = itertools.count()

CUSTOMER = {
    "firstName": "Ana",
    "lastName": "Souza",
    "email": "ana@example.org",
    "phone": "+5215512345678",
}
RFC = "XAXX010101000"  # SAT's generic RFC
SPEI_RECIPIENT = {
    "name": "Ana López",
    "account": "012180001183597198",
    "documentType": "RFC",
    "documentId": "IXLZ9511197B1",
}

# (path to call, base body): the body is valid as it is, so a difference between "absent" and
# "null" is the server's, not the test's. Made afresh for every request.
Setup = Callable[[Api], Awaitable[tuple[str, dict[str, Any]]]]


async def _payment(api: Api) -> tuple[str, dict[str, Any]]:
    body = {"amount": 50, "paymentMethodId": "1001", "customer": {"fullName": "Ana Souza"}}
    return "/payments", body


async def _transaction(api: Api) -> tuple[str, dict[str, Any]]:
    return "/transactions", (await _payment(api))[1]


async def _settled_payment(api: Api) -> dict[str, Any]:
    """A paid payment whose T+2 settlement has passed: the balance covers a refund or a
    transfer (a paid one alone left them `balance_insufficient`, absent and null alike)."""
    tx = await paid_payment(api)
    await api.advance(3 * DAY)
    return tx


async def _refund(api: Api) -> tuple[str, dict[str, Any]]:
    # Refunded in full: the payment's own net (fees and reserve taken) is less than its amount.
    await paid_payment(api)
    tx = await _settled_payment(api)
    return f"/payments/{tx['transactionId']}/refund", {"reason": "duplicate"}


async def _selector_session(api: Api) -> tuple[str, dict[str, Any]]:
    return "/checkout/sessions", {"amount": 50, "customer": dict(CUSTOMER)}


async def _one_shot_session(api: Api) -> tuple[str, dict[str, Any]]:
    # The hosted flow needs the buyer's name, e-mail and document (missing_required_fields).
    customer = {"fullName": "Ana Souza", "email": "ana@example.org", "documentId": RFC}
    return "/checkout/sessions", {"amount": 50, "paymentMethodId": "1001", "customer": customer}


async def _select(api: Api) -> tuple[str, dict[str, Any]]:
    status, session, _ = await send(api, "POST", *(await _selector_session(api)))
    assert status == 200, session
    body = {"paymentMethodId": "1001", "customer": {"email": "ana@example.org"}}
    return f"/checkout/sessions/{session['sessionId']}/select", body


async def _deposit_account(api: Api) -> tuple[str, dict[str, Any]]:
    body = {
        "endUserRef": f"user-{next(_unique)}",
        "name": "Ana López",
        "email": "ana@example.com",
        "phone": "+5215512345678",
        "metadata": {"plan": "gold"},
        "depositMethodId": "dm_spei_stp",
    }
    return "/me/deposit-accounts", body


async def _transfer(api: Api) -> tuple[str, dict[str, Any]]:
    await _settled_payment(api)
    return "/me/payout/transfer", {"amount": 1}


async def _payout(api: Api) -> tuple[str, dict[str, Any]]:
    body = {"methodId": "sbx_po_mx_spei", "amount": 500, "recipient": dict(SPEI_RECIPIENT)}
    return "/me/payout/send", body


async def _webhook(api: Api) -> tuple[str, dict[str, Any]]:
    return "/webhooks", {"events": ["*"], "url": "https://example.org/hook"}


async def _webhook_update(api: Api) -> tuple[str, dict[str, Any]]:
    status, created, _ = await send(api, "POST", *(await _webhook(api)))
    assert status == 201, created
    return f"/webhooks/{created['id']}", {"description": "orders"}


async def _sim_deposit(api: Api) -> tuple[str, dict[str, Any]]:
    status, created, _ = await send(api, "POST", *(await _deposit_account(api)))
    assert status == 201, created
    return "/_sim/deposits", {"clabe": created["account"]["clabe"], "amount": 100}


async def _withdrawal(api: Api) -> tuple[str, dict[str, Any]]:
    await _settled_payment(api)
    return "/_sim/withdrawals", {"amount": 1}


_STATE_NAMES = itertools.count(1)


async def _save_state(api: Api) -> tuple[str, dict[str, Any]]:
    return "/_sim/state", {"name": f"null-check-{next(_STATE_NAMES)}"}


async def _provider_update(api: Api) -> tuple[str, dict[str, Any]]:
    return "/_sim/providers/prv_cardhub", {"seed": 5, "behaviour": "accept", "callback": {}}


async def _provider_incident(api: Api) -> tuple[str, dict[str, Any]]:
    return "/_sim/providers/prv_cardhub/incidents", {"behaviour": "outage", "durationSeconds": 60}


_NAMESPACES = itertools.count(1)


async def _namespace(api: Api) -> tuple[str, dict[str, Any]]:
    return f"/_sim/namespaces/null-check-{next(_NAMESPACES)}", {"idleSeconds": 3600}


# (method, document path) -> the setups that give a valid request (several for checkout's modes).
SETUPS: dict[tuple[str, str], tuple[Setup, ...]] = {
    ("POST", "/payments"): (_payment,),
    ("POST", "/transactions"): (_transaction,),
    ("POST", "/payments/{id}/refund"): (_refund,),
    ("POST", "/checkout/sessions"): (_selector_session, _one_shot_session),
    ("POST", "/checkout/sessions/{token}/select"): (_select,),
    ("POST", "/me/deposit-accounts"): (_deposit_account,),
    ("POST", "/me/payout/transfer"): (_transfer,),
    ("POST", "/me/payout/send"): (_payout,),
    ("POST", "/webhooks"): (_webhook,),
    ("PATCH", "/webhooks/{id}"): (_webhook_update,),
    ("POST", "/_sim/deposits"): (_sim_deposit,),
    ("POST", "/_sim/withdrawals"): (_withdrawal,),
    ("POST", "/_sim/state"): (_save_state,),
    ("PATCH", "/_sim/providers/{id}"): (_provider_update,),
    ("POST", "/_sim/providers/{id}/incidents"): (_provider_incident,),
    ("PUT", "/_sim/namespaces/{name}"): (_namespace,),
}


async def send(api: Api, method: str, path: str, body: Any) -> tuple[int, Any, Any]:
    url = path if path.startswith("/_sim") else f"/api/v1{path}"
    headers = {"Authorization": f"Bearer {KEYS.sandbox_sk}"}
    response = await api.client.request(method, url, json=body, headers=headers)
    text = await response.text()
    return response.status, (json.loads(text) if text else None), response


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    while "$ref" in schema:
        target = SCHEMAS[schema.pop("$ref").rsplit("/", 1)[-1]]
        schema = {**target, **schema}
    return schema


def _types(schema: dict[str, Any]) -> list[str]:
    kinds = schema.get("type", [])
    return kinds if isinstance(kinds, list) else [kinds]


def _nullable(schema: dict[str, Any]) -> bool:
    branches = [resolved(b) for b in schema.get("oneOf", []) + schema.get("anyOf", [])]
    return "null" in _types(schema) or any("null" in _types(b) for b in branches)


def _matches(schema: dict[str, Any], body: dict[str, Any]) -> bool:
    """The `if` of checkout's two modes: a `required` list (all the document uses)."""
    return all(name in body for name in schema.get("required", ()))


def optional_fields(schema: dict[str, Any], body: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the optional properties of `schema`, and of the objects `body` sends."""
    schema = resolved(schema)
    if "if" in schema:
        branch = schema["then"] if _matches(resolved(schema["if"]), body) else schema["else"]
        schema = {**schema, **resolved(branch)}
    required = set(schema.get("required", ()))
    fields = []
    for name, member in schema.get("properties", {}).items():
        member = resolved(member)
        if name not in required:
            fields.append(prefix + name)
        if "object" in _types(member) and isinstance(body.get(name), dict):
            fields += optional_fields(member, body[name], f"{prefix}{name}.")
    return fields


def member_schema(schema: dict[str, Any], body: dict[str, Any], path: str) -> dict[str, Any]:
    schema = resolved(schema)
    if "if" in schema:
        branch = schema["then"] if _matches(resolved(schema["if"]), body) else schema["else"]
        schema = {**schema, **resolved(branch)}
    head, _, rest = path.partition(".")
    member = resolved(schema["properties"][head])
    return member_schema(member, body[head], rest) if rest else member


def edited(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`body` with the field at `path` set to `value`, or removed when `value` is `_ABSENT`."""
    head, _, rest = path.partition(".")
    if rest:
        return {**body, head: edited(body[head], rest, value)}
    out = {k: v for k, v in body.items() if k != head}
    if value is not _ABSENT:
        out[head] = value
    return out


_ABSENT = object()


def body_operations() -> dict[tuple[str, str], dict[str, Any]]:
    """Every operation with a JSON body, but team mode's own (`/_sim/team/...` answer 404
    team_mode_required on the local server these tests use; tests/api/test_team.py) and the
    extend of a namespace's lifetime (tests/api/test_namespace_lifetimes.py)."""
    found = {}
    for path, method, operation, _ in operations(DOC):
        request_body = operation.get("requestBody")
        team_only = path.startswith("/_sim/team/") or path.endswith("/extend")
        if request_body is not None and not team_only:
            found[(method.upper(), path)] = request_body["content"]["application/json"]["schema"]
    return found


def outcome(status: int, body: Any) -> tuple[int, str | None, str | None]:
    error = body.get("error") if isinstance(body, dict) else None
    return (status, error and error["code"], error and error.get("param"))


def test_every_optional_property_is_nullable() -> None:
    """The convention, held by the document itself: a non-nullable optional property must say
    so (`x-null-is-absent: false`) or it would refuse the null the description promises."""
    not_nullable = []
    for (method, path), schema in body_operations().items():
        bases = [{"customer": {}, "recipient": {}}]
        if path == "/checkout/sessions":
            bases = [{"customer": {}}, {"paymentMethodId": "1001", "customer": {}}]
        for base in bases:
            for field in optional_fields(schema, base):
                member = member_schema(schema, base, field)
                if not _nullable(member) and member.get("x-null-is-absent", True):
                    not_nullable.append(f"{method} {path} {field}")
    assert not not_nullable, not_nullable


def test_every_operation_with_optional_fields_has_a_setup() -> None:
    missing = []
    for key, schema in body_operations().items():
        probe = {"customer": {}, "recipient": {}, "paymentMethodId": "1001"}
        if optional_fields(schema, probe) and key not in SETUPS:
            missing.append(key)
    assert not missing, f"add a setup for {missing}"


async def test_every_setup_is_a_request_the_server_accepts(api: Api) -> None:
    """The comparison below shows that null is accepted only if the body without the field is:
    a setup refused by a business rule (balance, buyer data) would compare two refusals."""
    refused = []
    for (method, path), setups in SETUPS.items():
        for setup in setups:
            target, body = await setup(api)
            status, out, _ = await send(api, method, target, body)
            if status >= 300:
                refused.append(f"{method} {path} ({setup.__name__}): {outcome(status, out)}")
    assert not refused, "\n".join(refused)


async def test_null_is_the_same_as_absent_on_every_optional_field(api: Api) -> None:
    schemas = body_operations()
    differences = []
    checked = 0
    for (method, path), setups in SETUPS.items():
        schema = schemas[(method, path)]
        for setup in setups:
            _, base = await setup(api)
            for field in optional_fields(schema, base):
                answers = []
                for value in (_ABSENT, None):
                    target, body = await setup(api)
                    status, out, _ = await send(api, method, target, edited(body, field, value))
                    assert status < 500, out
                    answers.append(outcome(status, out))
                checked += 1
                if answers[0] != answers[1]:
                    differences.append(
                        f"{method} {path} {field}: absent {answers[0]}, null {answers[1]}"
                    )
    assert checked > 60
    assert not differences, "\n".join(differences)
