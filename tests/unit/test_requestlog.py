"""The request log's pure parts: masking rules, filters, the bounds of the ring."""

from __future__ import annotations

import gc

import pytest

from simulator.domain.errors import ApiError
from simulator.domain.requestlog import (
    MAX_BODY,
    Entry,
    LogRow,
    RequestFilters,
    RequestLog,
    body_view,
    logged,
    make_row,
    mask,
    mask_query,
    mask_text,
    parse_filters,
)


def entry(
    n: int = 0,
    *,
    status: int = 200,
    path: str = "/api/v1/payments",
    method: str = "GET",
    merchant: str | None = "mer_a",
    request_body: bytes | None = None,
    response_body: bytes | None = None,
) -> LogRow:
    return make_row(
        f"req_{n:024x}",
        1_700_000_000.0 + n,
        1_700_000_000.0 + n,
        method,
        path,
        "",
        status,
        merchant,
        "sandbox" if merchant else None,
        1.0,
        False,
        (),
        request_body,
        response_body,
    )


def test_secret_keys_are_masked_keeping_the_last_4_wherever_they_are() -> None:
    value = {
        "secretKey": "sk_test_19g744zrbw5buqxqpxp5w4gj",
        "nested": [{"access_token": "eyJhbGciOiJIUzI1NiJ9.abc.defg"}],
        "Refresh-Token": "rt_0123456789",
        "customer": {"documentId": "52998224725", "name": "Ana"},
        "secret": "short",
        "amount": 5,
    }
    assert mask(value) == {
        "secretKey": "****w4gj",
        "nested": [{"access_token": "****defg"}],
        "Refresh-Token": "****6789",
        "customer": {"documentId": "****4725", "name": "****"},  # a buyer's name
        "secret": "****",
        "amount": 5,
    }


def test_cards_passwords_and_cvvs() -> None:
    value = {
        "card": {"number": "4111111111111111", "cvv": "123", "expMonth": 12},
        "password": "hunter2hunter2",
        "attempt": {"number": 3},
        "note": "paid with 5500-0000-0000-0004, ref 1234567890123",
    }
    assert mask(value) == {
        "card": {"number": "****1111", "cvv": "****", "expMonth": 12},
        "password": "****",
        "attempt": {"number": 3},  # not a card's number
        "note": "paid with ****0004, ref 1234567890123",  # the second fails the Luhn check
    }


def test_text_and_queries() -> None:
    assert mask_text('{"secretKey":"sk_test_abcdefgh1234","cvv": "999", "a": 1') == (
        '{"secretKey":"****1234","cvv": "****", "a": 1'
    )
    assert mask_text("apiKey=pk&secretKey=sk_test_abcdefgh1234&password=x") == (
        "apiKey=****&secretKey=****1234&password=****"
    )
    assert mask_query("status=4xx&accessToken=abcdefghijkl") == "status=4xx&accessToken=****ijkl"


@pytest.mark.parametrize(
    "query, expected",
    [
        ({}, RequestFilters()),
        ({"status": "4xx"}, RequestFilters(status_class=4)),
        ({"status": "5XX"}, RequestFilters(status_class=5)),
        ({"status": "404"}, RequestFilters(status=404)),
        ({"method": "post", "path": "/payments"}, RequestFilters(method="POST", path="/payments")),
        ({"merchant": "mer_a", "status": ""}, RequestFilters(merchant="mer_a")),
    ],
)
def test_filters_parse(query: dict[str, str], expected: RequestFilters) -> None:
    assert parse_filters(query) == expected


@pytest.mark.parametrize(
    "query", [{"status": "6xx"}, {"status": "40"}, {"method": "GET!"}, {"path": "payments"}]
)
def test_bad_filters_name_their_parameter(query: dict[str, str]) -> None:
    with pytest.raises(ApiError) as caught:
        parse_filters(query)
    assert caught.value.code == "invalid_request" and caught.value.param == next(iter(query))


def test_filters_match() -> None:
    error = entry(status=404, path="/api/v1/payments/TXN-1")
    assert parse_filters({"status": "4xx", "path": "/payments/"}).matches(error)
    assert parse_filters({"path": "/api/v1/payments"}).matches(error)
    assert not parse_filters({"status": "5xx"}).matches(error)
    assert not parse_filters({"method": "POST"}).matches(error)
    assert not parse_filters({"merchant": "mer_b"}).matches(error)


def test_what_is_logged() -> None:
    assert logged("POST", "/api/v1/payments")
    assert logged("POST", "/_sim/clock/advance")
    assert not logged("GET", "/_sim/requests")
    assert not logged("GET", "/_sim/requests/stream")
    assert not logged("GET", "/_sim/requests/req_1")
    assert logged("POST", "/_sim/requests")  # not a read: a 405, logged
    assert not logged("GET", "/checkout/tok")
    assert not logged("GET", "/static/app.css")


def test_the_ring_keeps_the_newest_and_pages_newest_first() -> None:
    log = RequestLog(capacity=3)
    for n in range(5):
        log.record(entry(n, merchant="mer_a" if n % 2 else "mer_b"))
    assert [e.request_id[-1] for e in log.newest_first()] == ["4", "3", "2"]
    rows, total = log.page("mer_a", RequestFilters(), 10, 0)
    assert ([e.request_id[-1] for e in rows], total) == (["3"], 1)
    with pytest.raises(ApiError):
        log.find("mer_a", entry(4)[0])  # mer_b's
    log.clear()
    assert len(log) == 0


def test_bodies_are_cut_and_the_body_budget_bounds_the_ring() -> None:
    big = b"x" * (MAX_BODY + 100)
    one = entry(request_body=big)
    assert one[14] == MAX_BODY + 100 and one[12] == big[:MAX_BODY]
    assert Entry(one).detail()["request"]["body"] == {
        "bytes": MAX_BODY + 100,
        "truncated": True,
        "text": "x" * MAX_BODY,
    }
    log = RequestLog(capacity=100, body_budget=3 * MAX_BODY)
    for n in range(10):
        log.record(entry(n, request_body=big, response_body=b"{}"))
    assert len(log) == 2


def test_error_codes_come_from_the_envelope_when_read() -> None:
    envelope = b'{"error":{"code":"transaction_not_found","requestId":"req_1"}}'
    assert Entry(entry(status=404, response_body=envelope)).summary()["errorCode"] == (
        "transaction_not_found"
    )
    assert Entry(entry(status=502, response_body=b"<html>")).summary()["errorCode"] is None
    assert Entry(entry(status=200, response_body=envelope)).summary()["errorCode"] is None


def test_a_listener_sees_each_entry() -> None:
    log = RequestLog(capacity=2)
    seen: list[str] = []
    stop = log.subscribe(lambda row: seen.append(row[0]))
    log.record(entry(1))
    stop()
    log.record(entry(2))
    assert seen == [entry(1)[0]]
    assert RequestLog(capacity=0).enabled is False


def test_a_row_leaves_the_collectors_sight() -> None:
    """Rows are plain tuples of atoms (and of such tuples): the collections that find them stop
    tracking them, so 10,000 kept rows cost later full collections nothing."""
    headers = tuple([("Idempotency-Key", "k")])
    row = make_row(
        "req_1", 1.0, 1.0, "POST", "/api/v1/payments", "", 200, "mer_a", "sandbox", 1.0, False,
        headers, b"{}", b"{}",
    )  # fmt: skip
    gc.collect()
    gc.collect()  # a tuple is untracked once the tuples it holds are
    assert type(row) is tuple and not gc.is_tracked(row)


def test_a_body_nested_past_the_walk_is_shown_as_masked_text() -> None:
    # A 900-deep array answered 500 on its detail (the masking walk ran out of stack).
    deep = b'{"secretKey": "sk_test_abcdefgh1234", "x": ' + b"[" * 900 + b"]" * 900 + b"}"
    view = body_view(deep, len(deep))
    assert "body" not in view
    assert "sk_test_abcdefgh1234" not in view["text"]
    assert view["text"].endswith("]}")
