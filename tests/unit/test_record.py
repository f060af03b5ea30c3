"""payorch_cli/record/: request-log records to a scenario document, without a server."""

from __future__ import annotations

from typing import Any

from payorch_cli.record import TEST_DOCUMENTS, Identity, record, to_yaml
from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.loader import load_text

T0 = "2026-05-01T10:00:00.000Z"


def detail(
    method: str,
    path: str,
    status: int = 200,
    body: Any = None,
    answer: Any = None,
    *,
    at: str = T0,
    merchant: str | None = "mer_mercadoazul",
    environment: str | None = "sandbox",
    error: str | None = None,
    headers: dict[str, str] | None = None,
    query: str | None = None,
    events: list[str] | None = None,
) -> dict[str, Any]:
    request_body: dict[str, Any] = {"bytes": 1, "truncated": False}
    if body is not None:
        request_body["body"] = body
    response_body: dict[str, Any] = {"bytes": 1, "truncated": False}
    if answer is not None:
        response_body["body"] = answer
    return {
        "id": "req_1",
        "at": at,
        "simulatedAt": at,
        "method": method,
        "path": path,
        "query": query,
        "status": status,
        "errorCode": error,
        "merchantId": merchant,
        "environment": environment,
        "eventIds": events or [],
        "request": {"headers": headers or {}, "body": request_body},
        "response": {"body": response_body},
    }


ME = Identity("shp_mazul_tienda", "shp_mazul_tienda/production")


def loads(document: dict[str, Any]) -> None:
    """The document is a valid scenario: the loader accepts its YAML."""
    load_text(to_yaml(document), "recorded.yaml", Credentials.builtin().check)


def test_ids_are_saved_and_reused_and_only_stable_fields_expected() -> None:
    created = {
        "transactionId": "TXN-ABC123",
        "status": "pending",
        "amount": 10,
        "currency": "USD",
        "createdAt": T0,
        "paymentFormUrl": "http://127.0.0.1:8080/c/TXN-ABC123",
        "merchantId": "mer_mercadoazul",
    }
    details = [
        detail(
            "POST",
            "/api/v1/payments",
            body={"amount": 10, "paymentMethodId": "1001"},
            answer=created,
        ),
        detail(
            "POST",
            "/api/v1/payments/TXN-ABC123/simulate",
            body={"action": "paid"},
            answer={
                "id": "TXN-ABC123",
                "status": "completed",
                "eventsFired": ["payment.completed"],
            },
        ),
        detail(
            "GET",
            "/api/v1/payments/TXN-NOPE",
            404,
            error="transaction_not_found",
            answer={"error": {"code": "transaction_not_found", "requestId": "req_9"}},
        ),
    ]
    document = record(details, [], ME).document
    first, second, third = document["steps"]
    assert document["as"] == "shp_mazul_tienda"
    assert first["save"] == {"tx": "transactionId"}
    assert first["request"]["body"] == {"amount": 10, "paymentMethodId": "1001"}
    assert first["expect"] == {
        "status": 200,
        "json": {"status": "pending", "amount": 10, "currency": "USD"},
    }
    assert second["request"]["path"] == "/payments/${tx}/simulate"
    assert second["expect"]["json"] == {
        "id": "${tx}",
        "status": "completed",
        "eventsFired": ["payment.completed"],
    }
    assert third["expect"] == {"status": 404, "error": "transaction_not_found"}
    assert "save" not in second
    loads(document)


def test_clock_advances_events_and_skipped_requests() -> None:
    details = [
        detail("POST", "/_sim/reset", answer={"reset": True}),
        detail("POST", "/api/v1/webhooks", body={"events": "*"}, answer={"id": "wh_1"}),
        detail(
            "POST",
            "/api/v1/payments",
            body={"amount": 10, "paymentMethodId": "1001"},
            answer={"transactionId": "TXN-XYZ999", "status": "pending"},
        ),
        detail(
            "POST",
            "/_sim/clock/advance",
            body={"seconds": 5400},
            answer={"now": T0},
            at="2026-05-01T10:00:01.000Z",
        ),
        detail(
            "GET",
            "/api/v1/me/balance",
            answer={"balance": {"available": 1}},
            at="2026-05-01T11:30:02.000Z",
        ),
    ]
    events = [
        {
            "id": "evt_1",
            "type": "payment.completed",
            "createdAt": "2026-05-01T10:00:05.000Z",
            "data": {"id": "TXN-XYZ999", "status": "completed", "updatedAt": T0},
        },
        {
            "id": "evt_0",
            "type": "payment.failed",
            "createdAt": "2026-04-30T10:00:00.000Z",
            "data": {"id": "TXN-OLD", "status": "failed"},
        },  # before the recording: left out
    ]
    recording = record(details, events, ME)
    steps = recording.document["steps"]
    assert recording.skipped == ["POST /_sim/reset", "POST /api/v1/webhooks"]
    assert [next(k for k in s if k not in ("as", "save", "expect")) for s in steps] == [
        "request",
        "advance_clock",
        "expect_event",
        "request",
    ]
    assert steps[1] == {"advance_clock": "1h30m"}
    assert steps[2]["expect_event"] == {
        "type": "payment.completed",
        "match": {"data": {"id": "${tx}", "status": "completed"}},
    }
    assert steps[0]["save"] == {"tx": "transactionId"}  # for the event's match
    loads(recording.document)


def test_credentials_masks_and_literal_dollars() -> None:
    details = [
        detail(
            "POST",
            "/api/v1/payments",
            401,
            merchant=None,
            environment=None,
            error="missing_credentials",
            body={"amount": 1},
        ),
        detail(
            "POST",
            "/api/v1/payments",
            422,
            environment="production",
            error="cascade_exhausted",
            body={"amount": 1},
        ),
        detail(
            "POST",
            "/api/v1/payments",
            body={
                "amount": 100,
                "paymentMethodId": "sbx_pix",
                "documentId": "****9999",
                "merchantOrderId": "order-${x}",
                "country": "BRA",
            },
            headers={"Idempotency-Key": "k1", "Sandbox-Simulate": "paid"},
            answer={"transactionId": "TXN-1", "status": "pending"},
        ),
        detail(
            "POST",
            "/api/v1/auth/token",
            body={"apiKey": "pk_test_5kans5915l03i9bsat8xqpwh", "secretKey": "****4w4gj"},
            answer={"accessToken": "****abcd", "tokenType": "Bearer", "expiresIn": 3600},
        ),
    ]
    secret = "sk_test_19g744zrbw5buqxqpxp5w4gj"
    identity = Identity(
        "shp_mazul_tienda",
        "shp_mazul_tienda/production",
        lambda pk: secret if pk == "pk_test_5kans5915l03i9bsat8xqpwh" else None,
    )
    steps = record(details, [], identity).document["steps"]
    assert steps[0]["as"] == "none"
    assert steps[0]["expect"] == {"status": 401}  # no merchant: its code depends on the key
    assert steps[1]["as"] == "shp_mazul_tienda/production"
    assert steps[1]["expect"] == {"status": 422, "error": "cascade_exhausted"}
    body = steps[2]["request"]["body"]
    assert body["documentId"] == TEST_DOCUMENTS["BRA"]
    assert body["merchantOrderId"] == "order-$${x}"
    assert steps[2]["request"]["headers"] == {
        "Idempotency-Key": "${run.id}-k1",
        "Sandbox-Simulate": "paid",
    }
    assert steps[3]["request"]["body"]["secretKey"] == secret
    assert steps[3]["expect"]["json"] == {"tokenType": "Bearer"}
    document = record(details, [], identity).document
    loads(document)


def test_an_unknown_masked_secret_is_read_from_the_environment() -> None:
    details = [
        detail("POST", "/api/v1/auth/refresh", body={"refreshToken": "****zzzz"}, answer={}),
    ]
    recording = record(details, [], ME)
    body = recording.document["steps"][0]["request"]["body"]
    assert body == {"refreshToken": "${env.PAYORCH_RECORD_REFRESHTOKEN}"}
    assert recording.notes and "refreshToken" in recording.notes[0]


def test_a_refused_clock_advance_stays_a_request() -> None:
    details = [
        detail("POST", "/_sim/clock/advance", 400, body={"seconds": -1}, error="invalid_request")
    ]
    [step] = record(details, [], ME).document["steps"]
    assert step["request"]["path"] == "/_sim/clock/advance"
    assert step["expect"] == {"status": 400, "error": "invalid_request"}


def test_each_event_follows_the_request_that_caused_it_whatever_the_millisecond() -> None:
    """Requests a millisecond apart: the refund's events carry the GET's timestamp. The log's
    eventIds put them after the refund; an event of a request outside the recording (`outside`)
    or of a request left out is left out, even when its timestamp is the first request's."""
    tick = "2026-05-01T10:00:00.002Z"
    details = [
        detail(
            "POST",
            "/api/v1/payments/TXN-ABC123/refund",
            body={"amount": 5},
            answer={"status": "refunded"},
            at="2026-05-01T10:00:00.001Z",
            events=["evt_refunded"],
        ),
        detail("POST", "/api/v1/webhooks/wh_1/test", at=tick, events=["evt_test"]),
        detail("GET", "/api/v1/me/balance", answer={"balance": {"available": 1}}, at=tick),
    ]
    events = [
        {"id": i, "type": t, "createdAt": tick, "data": {"id": "TXN-ABC123", "status": s}}
        for i, t, s in [
            ("evt_refunded", "payment.refunded", "refunded"),
            ("evt_test", "webhook.test", "test"),
            ("evt_simulated", "payment.completed", "completed"),
        ]
    ]
    recording = record(details, events, ME, outside=["evt_simulated"])
    steps = recording.document["steps"]
    assert [next(k for k in s if k not in ("as", "save", "expect")) for s in steps] == [
        "request",
        "expect_event",
        "request",
    ]
    assert steps[1]["expect_event"]["type"] == "payment.refunded"
    # Without eventIds (a server from before them) the timestamps decide, as they did: all three
    # look as if the GET caused them.
    for one in details:
        one.pop("eventIds")
    untagged = record(details, events, ME).document["steps"]
    assert [next(k for k in s if k not in ("as", "save", "expect")) for s in untagged] == [
        "request",
        "request",
        "expect_event",
        "expect_event",
        "expect_event",
    ]


def test_what_cannot_be_a_step_is_a_comment_and_counted() -> None:
    """Log records the recorder cannot make a step of: a body nested past what a scenario
    file may hold, a body the log cut short, a record of an unknown shape. Each is a comment
    where its step would be; the file still loads."""
    nested: Any = []
    for _ in range(100):
        nested = [nested]
    cut = detail("POST", "/api/v1/payments", 400, body=None)
    cut["request"]["body"] = {"bytes": 70_000, "truncated": True, "text": "{" * 10}
    odd = detail("GET", "/api/v1/me/balance", answer={"ok": True})
    del odd["status"]
    recording = record(
        [
            detail("POST", "/api/v1/payments", 400, body={"metadata": nested}),
            cut,
            odd,
            detail("GET", "/api/v1/ping", answer={"ok": True}),
        ],
        [],
        ME,
    )
    assert len(recording.document["steps"]) == 1
    assert recording.unexpressed == [
        "POST /api/v1/payments",
        "POST /api/v1/payments",
        "GET /api/v1/me/balance",
    ]
    text = to_yaml(recording.document, recording.comments)
    lines = [line for line in text.splitlines() if line.startswith("# NOT RECORDED")]
    assert "nested deeper than 56 levels" in lines[0]
    assert "was cut short in the log" in lines[1]
    assert "KeyError" in lines[2]
    assert text.index("# NOT RECORDED") < text.index("path: /ping")
    load_text(text, "recorded.yaml", Credentials.builtin().check)


def test_ids_of_paths_not_created_in_the_recording_are_flagged_vars() -> None:
    recording = record(
        [
            detail("GET", "/api/v1/payments/TXN-7Q2M4K8Z1P3X5C9V", answer={"status": "paid"}),
            detail("GET", "/api/v1/payments/TXN-7Q2M4K8Z1P3X5C9V/trace", answer={}),
            detail("GET", "/api/v1/payment-methods/sbx_pix", answer={}),
        ],
        [],
        ME,
    )
    steps = recording.document["steps"]
    assert [s["request"]["path"] for s in steps] == [
        "/payments/${tx}",
        "/payments/${tx}/trace",
        "/payment-methods/sbx_pix",  # a fixture id: the same on every server
    ]
    assert recording.document["vars"] == {"tx": "TXN-7Q2M4K8Z1P3X5C9V"}
    assert recording.unlinked == ["TXN-7Q2M4K8Z1P3X5C9V"]
    text = to_yaml(recording.document, recording.comments)
    assert text.count("# UNLINKED: TXN-7Q2M4K8Z1P3X5C9V") == 1
    loads(recording.document)


def test_balance_reads_expect_changes_from_the_first_one() -> None:
    first = {"currency": "USD", "balance": {"available": 10, "pending": 0}, "movements": []}
    later = {
        "currency": "USD",
        "balance": {"available": 10, "pending": 95.2},
        "movements": [{"type": "payment", "amount": 100, "transactionId": "TXN-1A2B3C4D5E6F7G8H"}],
    }
    recording = record(
        [
            detail("GET", "/api/v1/me/balance", answer=first),
            detail(
                "POST",
                "/api/v1/payments",
                body={"amount": 100},
                answer={"transactionId": "TXN-1A2B3C4D5E6F7G8H", "status": "pending"},
            ),
            detail("POST", "/api/v1/payments/TXN-1A2B3C4D5E6F7G8H/simulate", answer={}),
            detail("GET", "/api/v1/me/balance", answer=later),
        ],
        [],
        ME,
    )
    steps = recording.document["steps"]
    assert steps[0]["save"] == {"first_balance": "."}
    assert steps[0]["expect"]["json"]["balance"] == {
        "available": {"$type": "number"},
        "pending": {"$type": "number"},
    }
    assert steps[3]["expect"]["json"]["balance"] == {
        "available": "${first_balance.balance.available}",
        "pending": "${first_balance.balance.pending + 95.2}",
    }
    assert steps[3]["expect"]["json"]["movements"] == {
        "$contains": [{"type": "payment", "amount": 100, "transactionId": "${tx}"}]
    }
    loads(recording.document)


def test_a_made_id_is_told_from_a_fixture_id_whatever_its_random_tail() -> None:
    from payorch_cli.record.values import MADE_ID

    # A transaction id's tail holds no digit about one time in 260: it is still made.
    made = ("TXN-ABCDEFGHJKLMNPQR", "TXN-0JQ8QPSXYUHGATRW", "CLM-7KQ2M9XW", "po_3f9a1c2d")
    assert all(MADE_ID.match(value) for value in made)
    fixtures = ("sbx_pix", "prv_orbita_cards", "shp_mazul_tienda", "mer_mercadoazul", "1001")
    assert not any(MADE_ID.match(value) for value in fixtures)
