"""The recording file of `payorch proxy` (payorch_cli/recording/format.py): one redacted JSON
line per exchange or webhook, appended and flushed as each completes, so that nothing but the
line being written sits in memory and a proxy killed mid-way leaves every whole line readable."""

from __future__ import annotations

import contextlib
import os
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from payorch_cli.proxy.redact import Redactor
from payorch_cli.recording import format as fmt


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class Side:
    """One side of an exchange as it went by: its headers, the first bytes of its body (up to
    the body limit and one more, to know it was cut) and the body's whole size."""

    headers: list[tuple[str, str]]
    kept: bytes
    size: int


@dataclass(slots=True)
class RawExchange:
    at: str
    duration_ms: float
    method: str
    path: str
    query: str
    request: Side
    status: int | None  # None: no answer (error set)
    response: Side | None
    error: tuple[str, str] | None = None  # (catalogue code, message)


@dataclass(slots=True)
class RawWebhook:
    at: str
    headers: list[tuple[str, str]]
    body: bytes
    signature: fmt.SignatureCheck
    forwarded: fmt.Forwarded | None


class Recorder:
    """Appends to `directory`/EXCHANGES_FILE; redaction happens here, before each write."""

    def __init__(
        self,
        directory: Path,
        upstream: str,
        redactor: Redactor,
        body_limit: int = fmt.DEFAULT_BODY_LIMIT,
        generator: str = "payorch",
    ) -> None:
        self.path = directory / fmt.EXCHANGES_FILE
        self.redactor = redactor
        self.body_limit = body_limit
        self.seq = 0
        self.exchanges = 0
        self.webhooks = 0
        self._file = self.path.open("xb")
        header: fmt.Header = {
            "format": fmt.FORMAT,
            "version": fmt.VERSION,
            "upstream": redactor.text(upstream),
            "startedAt": now_iso(),
            "bodyLimit": body_limit,
            "generator": generator,
        }
        self._write(header)

    def _write(self, record: Any) -> None:
        self._file.write(orjson.dumps(record) + b"\n")
        self._file.flush()

    def exchange(self, raw: RawExchange) -> None:
        self.seq += 1
        self.exchanges += 1
        redact = self.redactor
        # First learn what both bodies hold by their keys (a name the answer shows under
        # `beneficiary` is then replaced in the request too, wherever it is), then redact.
        for side in (raw.request, raw.response):
            if side is not None and 0 < side.size <= self.body_limit:
                with contextlib.suppress(orjson.JSONDecodeError):
                    redact.learn(orjson.loads(side.kept))
        request: fmt.Request = {
            "method": raw.method,
            "path": redact.path(raw.path),
            "query": redact.query(raw.query),
            **self._message(raw.request),
        }
        response: fmt.Response | None = None
        if raw.response is not None and raw.status is not None:
            response = {"status": raw.status, **self._message(raw.response)}
        error: fmt.ExchangeError | None = None
        if raw.error is not None:
            error = {"code": raw.error[0], "message": redact.text(raw.error[1])}
        record: fmt.Exchange = {
            "kind": "exchange",
            "seq": self.seq,
            "at": raw.at,
            "durationMs": round(raw.duration_ms, 3),
            "request": request,
            "response": response,
            "comparable": raw.error is None,
            "error": error,
        }
        self._write(record)

    def webhook(self, raw: RawWebhook) -> None:
        self.seq += 1
        self.webhooks += 1
        message = self._message(Side(raw.headers, raw.body, len(raw.body)))
        body = message["body"]
        event_type = body.get("type") if isinstance(body, dict) else None
        if not isinstance(event_type, str):
            event_type = dict((k.lower(), v) for k, v in raw.headers).get("x-service-event")
        record: fmt.Webhook = {
            "kind": "webhook",
            "seq": self.seq,
            "at": raw.at,
            "headers": message["headers"],
            "body": body,
            "bodyText": message["bodyText"],
            "eventType": event_type,
            "signature": raw.signature,
            "forwarded": raw.forwarded,
        }
        self._write(record)

    def end(self) -> None:
        """The `end` line, and everything on disk (fsync): written on stop and on flush."""
        record: fmt.End = {
            "kind": "end",
            "exchanges": self.exchanges,
            "webhooks": self.webhooks,
            "endedAt": now_iso(),
        }
        self._write(record)
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def _message(self, side: Side) -> fmt.Message:
        headers = self.redactor.headers(side.headers)
        truncated = side.size > self.body_limit
        body: Any = None
        text: str | None = None
        if side.size:
            raw = side.kept[: self.body_limit]
            if not truncated:
                raw = _decoded(raw, headers.get("content-encoding", ""), self.body_limit)
                try:
                    body = self.redactor.json(orjson.loads(raw))
                except (orjson.JSONDecodeError, RecursionError):
                    body = None
                    text = self.redactor.body_text(raw.decode("utf-8", "replace"))
            else:
                text = self.redactor.body_text(raw.decode("utf-8", "replace"))
        return {
            "headers": headers,
            "body": body,
            "bodyText": text,
            "bodyBytes": side.size,
            "truncated": truncated,
        }


def _decoded(raw: bytes, encoding: str, limit: int) -> bytes:
    """A whole compressed body as its first `limit` bytes decompressed (the client got it
    compressed, as sent); anything else as it is."""
    if encoding not in ("gzip", "deflate"):
        return raw
    try:
        return zlib.decompressobj(47).decompress(raw, limit)  # 47: gzip or zlib header
    except zlib.error:
        return raw
