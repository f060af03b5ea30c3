"""A recording drift cannot read gets one clear line on stderr and exit 2, before any replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.drift.conftest import drift

HEADER = {
    "format": "payorch-recording",
    "version": 1,
    "upstream": "https://sandbox.example",
    "startedAt": "2026-11-28T15:00:00.000Z",
    "bodyLimit": 1048576,
    "generator": "test",
}
EXCHANGE = {
    "kind": "exchange",
    "seq": 1,
    "at": "2026-11-28T15:00:01.000Z",
    "durationMs": 3.0,
    "request": {
        "method": "GET",
        "path": "/api/v1/payments/nope",
        "query": "",
        "headers": {"authorization": "Bearer sk_test_REDACTED_1"},
        "body": None,
        "bodyText": None,
        "bodyBytes": 0,
        "truncated": False,
    },
    "response": {
        "status": 404,
        "headers": {},
        "body": {
            "error": {
                "code": "transaction_not_found",
                "type": "invalid_request_error",
                "message": "No such transaction",
                "param": "id",
                "requestId": "req_1",
            }
        },
        "bodyText": None,
        "bodyBytes": 11,
        "truncated": False,
    },
    "comparable": True,
    "error": None,
}


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _one_line_exit_2(*args: str, says: str) -> None:
    done = drift(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("hello\n", "not a payorch recording"),
        (json.dumps({"format": "har", "version": 1}) + "\n", "not a payorch recording"),
        ("", "not a payorch recording"),
        (json.dumps({**HEADER, "version": 2}) + "\n", "from a newer payorch"),
        (json.dumps(HEADER) + "\n" + json.dumps(EXCHANGE)[:-40], "cut mid-line"),
        (json.dumps(HEADER) + "\n" + json.dumps(EXCHANGE)[:-40] + "\n", "not whole JSON"),
        (json.dumps(HEADER) + "\n" + json.dumps({"seq": 1}) + "\n", "not a record"),
    ],
    ids=["text", "other-json", "empty", "newer", "cut", "broken-line", "no-kind"],
)
def test_a_bad_recording_gets_one_line_and_exit_2(tmp_path: Path, content: str, says: str):
    path = _write(tmp_path / "rec.jsonl", content)
    _one_line_exit_2(str(path), says=says)


def test_a_binary_file_is_not_a_recording(tmp_path: Path):
    path = tmp_path / "rec.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    _one_line_exit_2(str(path), says="not a payorch recording")


def test_a_missing_file_and_a_bad_option_are_usage_errors(tmp_path: Path):
    _one_line_exit_2(str(tmp_path / "nope.jsonl"), says="no such file")
    path = _write(tmp_path / "rec.jsonl", json.dumps(HEADER) + "\n")
    done = drift(str(path), "--min-parity", "2")
    assert done.returncode == 2 and "1.0" in done.stderr


def test_a_proxy_out_directory_is_read_as_its_exchanges_file(tmp_path: Path):
    _write(tmp_path / "exchanges.jsonl", json.dumps(HEADER) + "\n", json.dumps(EXCHANGE) + "\n")
    done = drift(str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["compared"], doc["parity"]) == (1, 1.0)


def test_a_server_that_cannot_be_reached_is_exit_3(tmp_path: Path):
    path = _write(tmp_path / "rec.jsonl", json.dumps(HEADER) + "\n", json.dumps(EXCHANGE) + "\n")
    done = drift(str(path), "--base-url", "http://127.0.0.1:1")
    assert done.returncode == 3 and done.stderr.startswith("payorch drift: cannot reach")
