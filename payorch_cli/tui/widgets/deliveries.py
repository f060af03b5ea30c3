"""The deliveries regions: the list, and one delivery's request (headers, body) and attempts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.widgets import DataTable, Static

from payorch_cli.tui import present
from payorch_cli.tui.widgets.keyed_table import KeyedTable

COLUMNS = (
    ("created", "Created"),
    ("event", "Event"),
    ("status", "Status"),
    ("attempts", "Try"),
    ("http", "HTTP"),
    ("latency", "Latency"),
    ("id", "Delivery"),
    ("target", "Endpoint"),
)


def last_attempt(delivery: dict[str, Any]) -> dict[str, Any] | None:
    attempts = delivery.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        return attempts[-1]
    return None


def target(delivery: dict[str, Any]) -> str:
    hook = present.obj(delivery.get("webhook"))
    if delivery.get("managed") or hook.get("managed"):
        return "managed inbox"
    return present.text(hook.get("url") or delivery.get("webhookId"))


def delivery_cells(delivery: dict[str, Any]) -> list[Any]:
    attempt = last_attempt(delivery)
    return [
        present.when(delivery.get("createdAt")),
        present.text(delivery.get("eventType")),
        present.delivery_status_text(delivery.get("status")),
        Text(present.text(delivery.get("attemptCount")), justify="right"),
        present.http_status_text(attempt),
        Text(present.latency(attempt), justify="right"),
        present.text(delivery.get("id")),
        target(delivery),
    ]


class DeliveriesTable(KeyedTable):
    COLUMNS = COLUMNS
    # The delivery id stays whole at 80 columns and the endpoint at 120: the latency and the
    # attempt count (both in the delivery opened) leave first, then the endpoint, the time.
    GIVE_WAY = ("latency", "attempts", "target", "created")

    def cells(self, record: dict[str, Any]) -> list[Any]:
        return delivery_cells(record)


def signature_header(attempt: dict[str, Any] | None) -> str:
    """The `X-Service-Signature` of an attempt, as far as the delivery record shows it.

    The server keeps the signature's `t` but exposes neither it nor the `v1` HMAC (and the TUI
    never holds the signing secret), so `t` is derived from `sentAt` (they are equal unless two
    attempts fell in one second) and the HMAC is named, not shown. A server that exposes the
    header (`signature` on the attempt) is shown verbatim.
    """
    if not attempt:
        return "(not sent yet)"
    for key in ("signature", "signatureHeader"):
        if isinstance(attempt.get(key), str):
            return attempt[key]
    if attempt.get("stored"):
        return "(managed inbox: stored, not sent)"
    sent = present.parse_time(attempt.get("sentAt"))
    if sent is None:
        return "(no attempt sent)"
    return f"t={int(datetime.timestamp(sent))},v1=<HMAC-SHA256, not exposed by the server>"


class RequestPanel(Static):
    """The request as the endpoint got it: method, URL, headers, then the body."""

    headers: dict[str, str]
    body: str

    def show(self, delivery: dict[str, Any]) -> None:
        attempt = last_attempt(delivery)
        self.headers = {
            "X-Service-Event": present.text(delivery.get("eventType")),
            "X-Service-Delivery": present.text(delivery.get("id")),
            "X-Service-Signature": signature_header(attempt),
        }
        headers = Table.grid(padding=(0, 1))
        headers.add_column(style="bold cyan", no_wrap=True)
        headers.add_column(overflow="fold")
        headers.add_row("POST", target(delivery))
        for name, value in self.headers.items():
            headers.add_row(name, value)
        event = delivery.get("event")
        self.body = body = (
            json.dumps(event, indent=2, ensure_ascii=False)
            if event is not None
            else "(the event is no longer stored)"
        )
        grid = Table.grid()
        grid.add_column()
        grid.add_row(headers)
        grid.add_row("")
        grid.add_row(
            Syntax(body, "json", theme="ansi_dark", word_wrap=True, background_color="default")
        )
        self.update(grid)


class AttemptsTable(DataTable[Any]):
    def on_mount(self) -> None:
        self.cursor_type = "row"
        for key, label in (
            ("n", "#"),
            ("at", "At (sim)"),
            ("trigger", "Trigger"),
            ("http", "HTTP"),
            ("latency", "Latency"),
            ("note", "Error / answer"),
        ):
            self.add_column(label, key=key)

    def show(self, delivery: dict[str, Any]) -> None:
        self.clear()
        attempts = present.items(delivery.get("attempts"))
        for attempt in attempts:
            if not isinstance(attempt, dict):
                continue
            note = attempt.get("error") or attempt.get("responseBody") or ""
            self.add_row(
                present.text(attempt.get("number")),
                present.when(attempt.get("at")),
                present.text(attempt.get("trigger")),
                present.http_status_text(attempt),
                present.latency(attempt),
                present.text(note)[:120].replace("\n", " ") if note else "",
            )
