"""Raw exchanges for scenario steps: any method, path, headers and body, and the whole answer.

`Client` (payorch_cli/client.py) is the CLI's one HTTP client: it returns data and raises
ApiError, which is what commands want. A scenario step needs the status, headers and body of
every answer, errors included, so this subclass adds `exchange()` on the same connection
handling (one keep-alive connection, reopened once if the server dropped it).
"""

from __future__ import annotations

import contextlib
import http.client
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from payorch import bounded
from payorch.vocabulary import API_PREFIX
from payorch_cli.client import Client

# Paths a step may write as they are; any other path is relative to /api/v1.
UNPREFIXED = ("/_sim/", "/_sim", "/api/")


@dataclass
class Exchange:
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str | None
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)  # lower-cased names
    text: str = ""
    json: Any = None
    is_json: bool = False
    duration_ms: float = 0.0


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class ScenarioClient(Client):
    def target(self, path: str, query: dict[str, Any] | None = None) -> str:
        full = path if path.startswith(UNPREFIXED) else API_PREFIX + path
        if query:
            full += ("&" if "?" in full else "?") + urlencode(
                {k: _text(v) for k, v in query.items()}
            )
        return self._prefix + full

    def exchange(
        self,
        method: str,
        path_or_url: str,
        *,
        key: str | None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: bytes | None = None,
    ) -> Exchange:
        """Send one request; never raises on an HTTP status (ApiError only if unreachable)."""
        sent = {"Accept": "application/json"}
        if key is not None:
            sent["Authorization"] = f"Bearer {key}"
        sent.update(headers or {})
        absolute = path_or_url.startswith(("http://", "https://"))
        if absolute:
            parts = urlsplit(path_or_url)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            if query:
                target += ("&" if "?" in target else "?") + urlencode(
                    {k: _text(v) for k, v in query.items()}
                )
            url = f"{parts.scheme}://{parts.netloc}{target}"
        else:
            target = self.target(path_or_url, query)
            url = self.base_url.removesuffix(self._prefix) + target
        record = Exchange(method, url, sent, body.decode("utf-8", "replace") if body else None)
        started = time.perf_counter()
        if absolute:
            response, raw = self._once(path_or_url, method, target, body, sent)
        else:
            response, raw = self._keepalive(method, target, body, sent)
        record.duration_ms = (time.perf_counter() - started) * 1000
        record.status = response.status
        record.headers = {k.lower(): v for k, v in response.getheaders()}
        record.text = raw.decode("utf-8", "replace")
        if raw and "json" in record.headers.get("content-type", ""):
            with contextlib.suppress(ValueError):  # a broken JSON body stays text
                record.json, record.is_json = bounded.json_loads(raw), True
        return record

    def _once(
        self, url: str, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[http.client.HTTPResponse, bytes]:
        from payorch_cli.client import ApiError

        parts = urlsplit(url)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname or "", parts.port, timeout=self.timeout)
        try:
            conn.request(method, target, body=body, headers=headers)
            response = conn.getresponse()
            return response, response.read()
        except OSError as exc:
            raise ApiError("connection_failed", f"Cannot reach {url}: {exc}", 0) from None
        finally:
            conn.close()
