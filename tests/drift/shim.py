"""Test helpers standing in for the real `payorch proxy` (built on another branch): a tiny
recording shim that forwards to an upstream payorch and writes the recording format exactly as
payorch_cli/recording/format.py says (placeholders included), and a planting server that sits
between the shim and the upstream and alters chosen answers and webhooks.

Both are aiohttp apps on one background loop. The shim's webhook receiver is
`{shim}/_receiver`; the planter rewrites a subscription's `url` to its own relay, so the
upstream's deliveries pass through the planter (which may drop, hold or change them) before the
shim records them.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from aiohttp import ClientSession, web

from payorch_cli.recording.format import DEFAULT_BODY_LIMIT, FORMAT, VERSION

KEY = re.compile(r"\b(sk|pk)_(test|live)_(?!REDACTED_)[A-Za-z0-9_\-]+")
TOKEN_FIELDS = {"accessToken": "tok", "refreshToken": "rt"}
WEBHOOK_SECRET = re.compile(r"whsec_[A-Za-z0-9]+")
HOP = {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
STEP_HEADER = "x-drift-step"
# `payorch scenario run --namespace auto` through the shim: the prefix is left out of the
# recorded paths (and the namespace's own making out of the recording), so that the recording
# reads as the traffic of one fresh world.
NS_PREFIX = re.compile(r"^/ns/[a-z0-9][a-z0-9-]*(?=/)")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Loop:
    """One asyncio loop on a daemon thread, for the test servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def call(self, coroutine: Any, timeout: float = 30) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    async def serve(self, app: web.Application) -> tuple[web.AppRunner, str]:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # a test double
        return runner, f"http://127.0.0.1:{port}"


class Redactor:
    """Credentials to placeholders of their kind, the same input always the same one."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.count = 0

    def _placeholder(self, value: str, prefix: str) -> str:
        if value not in self.seen:
            self.count += 1
            self.seen[value] = f"{prefix}_REDACTED_{self.count}"
        return self.seen[value]

    def text(self, value: str) -> str:
        for secret, placeholder in self.seen.items():
            value = value.replace(secret, placeholder)
        value = KEY.sub(lambda m: self._placeholder(m[0], f"{m[1]}_{m[2]}"), value)
        return WEBHOOK_SECRET.sub("whsec_REDACTED", value)

    def value(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v, key) for v in value]
        if isinstance(value, str):
            if key in TOKEN_FIELDS:
                return self._placeholder(value, TOKEN_FIELDS[key])
            return self.text(value)
        return value


def _message(headers: Any, raw: bytes, redactor: Redactor, limit: int) -> dict[str, Any]:
    text = raw.decode("utf-8", "replace") if raw else None
    body: Any = None
    truncated = len(raw) > limit
    if raw and not truncated:
        try:
            body = json.loads(raw)
            text = None
        except ValueError:
            pass
    elif truncated:
        text = raw[:limit].decode("utf-8", "replace")
    return {
        "headers": {
            k.lower(): "REDACTED" if "signature" in k.lower() else redactor.text(v)
            for k, v in headers.items()
            if k.lower() not in HOP
        },
        "body": redactor.value(body),
        "bodyText": redactor.text(text) if text else None,
        "bodyBytes": len(raw),
        "truncated": truncated,
    }


class _Track:
    """One recording file: the traffic of one world (the root paths, or one namespace)."""

    def __init__(self, path: Path, upstream: str, limit: int) -> None:
        self.path = path
        self.seq = self.exchanges = self.webhooks = 0
        self.file = path.open("w", encoding="utf-8")
        self.write(
            {
                "format": FORMAT,
                "version": VERSION,
                "upstream": upstream,
                "startedAt": now_iso(),
                "bodyLimit": limit,
                "generator": "tests/drift/shim.py",
            }
        )

    def write(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()

    def close(self) -> None:
        end = {"exchanges": self.exchanges, "webhooks": self.webhooks, "endedAt": now_iso()}
        self.write({"kind": "end", **end})
        self.file.close()


class RecordingShim:
    """Forwards to `upstream` (a base URL, maybe with a path) and appends to `out`; the
    traffic of a namespace (`/ns/NAME/...`) goes to a recording of its own, `out` named
    `<stem>-NAME.jsonl` (`tracks`), as a proxy in front of one world would have seen it."""

    def __init__(self, loop: Loop, upstream: str, out: Path, limit: int = DEFAULT_BODY_LIMIT):
        self.loop, self.upstream, self.out, self.limit = loop, upstream.rstrip("/"), out, limit
        self.redactor = Redactor()
        self.tracks = {"": _Track(out, self.upstream, limit)}
        app = web.Application()
        app.router.add_post("/_receiver", self._receive)
        app.router.add_post("/_receiver/{world}", self._receive)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self.runner, self.url = loop.call(loop.serve(app))
        self.session: ClientSession = loop.call(self._session())

    @property
    def webhooks(self) -> int:
        return self.tracks[""].webhooks

    def track(self, world: str) -> _Track:
        if world not in self.tracks:
            path = self.out.with_name(f"{self.out.stem}-{world}{self.out.suffix}")
            self.tracks[world] = _Track(path, f"{self.upstream}/ns/{world}", self.limit)
        return self.tracks[world]

    async def _session(self) -> ClientSession:
        return ClientSession(auto_decompress=True)

    async def _forward(self, request: web.Request) -> web.Response:
        started, at = time.perf_counter(), now_iso()
        raw = sent = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        prefix = NS_PREFIX.match(request.rel_url.path)
        world = prefix.group(0).split("/")[2] if prefix else ""
        if request.method == "POST" and request.rel_url.path.endswith("/webhooks") and raw:
            sent = self._relayed(raw, world)
        path = NS_PREFIX.sub("", request.rel_url.path)
        async with self.session.request(
            request.method,
            self.upstream + request.rel_url.path,
            params=request.rel_url.query,
            data=sent or None,
            headers=headers,
            allow_redirects=False,
        ) as answer:
            body = await answer.read()
            answer_headers = dict(answer.headers)
            status = answer.status
        if path.startswith("/_sim/namespaces"):
            return web.Response(status=status, body=body, content_type="application/json")
        track = self.track(world)
        track.seq += 1
        track.exchanges += 1
        recorded_request = _message(headers, raw, self.redactor, self.limit)
        track.write(
            {
                "kind": "exchange",
                "seq": track.seq,
                "at": at,
                "durationMs": round((time.perf_counter() - started) * 1000, 3),
                "request": {
                    "method": request.method,
                    "path": path,
                    "query": request.rel_url.query_string,
                    **recorded_request,
                },
                "response": {
                    "status": status,
                    **_message(answer_headers, body, self.redactor, self.limit),
                },
                "comparable": True,
                "error": None,
            }
        )
        keep = {k: v for k, v in answer_headers.items() if k.lower() not in HOP}
        keep.pop("Content-Encoding", None)
        return web.Response(status=status, body=body, headers=keep)

    def _relayed(self, raw: bytes, world: str) -> bytes:
        """A subscription to another URL is made to the shim's receiver, which records each
        delivery and passes it on, unchanged, to that URL (as `--forward-webhooks-to`)."""
        try:
            body = json.loads(raw)
        except ValueError:
            return raw
        url = body.get("url") if isinstance(body, dict) else None
        if not isinstance(url, str) or url.startswith(f"{self.url}/_receiver"):
            return raw
        receiver = f"{self.url}/_receiver/{world}" if world else f"{self.url}/_receiver"
        body["url"] = f"{receiver}?to={quote(url, safe='')}"
        return json.dumps(body).encode()

    async def _receive(self, request: web.Request) -> web.Response:
        raw = await request.read()
        status = 200
        to = request.query.get("to")
        if to:
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
            try:
                async with self.session.post(to, data=raw, headers=headers) as answer:
                    status = answer.status
            except OSError:
                status = 502
        message = _message(request.headers, raw, self.redactor, self.limit)
        track = self.track(request.match_info.get("world", ""))
        track.seq += 1
        track.webhooks += 1
        body = message["body"]
        track.write(
            {
                "kind": "webhook",
                "seq": track.seq,
                "at": now_iso(),
                "headers": message["headers"],
                "body": body,
                "bodyText": message["bodyText"],
                "eventType": body.get("type") if isinstance(body, dict) else None,
                "signature": "unchecked",
                "forwarded": None,
            }
        )
        return web.Response(status=status)

    def wait_webhooks(self, count: int, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while self.webhooks < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.webhooks >= count, f"{self.webhooks} of {count} webhooks came"

    def close(self) -> None:
        for track in self.tracks.values():
            track.close()
        self.loop.call(self.session.close())
        self.loop.call(self.runner.cleanup())


AnswerPlant = Callable[[int, Any], tuple[int, Any]]
HookPlant = Callable[[list[dict[str, Any]], dict[str, Any]], list[dict[str, Any]]]


class Planter:
    """Forwards to `upstream`, changing the answer of a request whose `X-Drift-Step` header
    names a planted step (`answers[step](status, body) -> (status, body)`), and relaying
    webhooks through `webhooks(held, event) -> events to deliver now` (held: state kept between
    calls, to swap two)."""

    def __init__(
        self,
        loop: Loop,
        upstream: str,
        answers: dict[str, AnswerPlant],
        webhooks: HookPlant | None = None,
    ) -> None:
        self.loop, self.upstream, self.answers = loop, upstream.rstrip("/"), answers
        self.webhooks = webhooks or (lambda held, event: [event])
        self.held: list[dict[str, Any]] = []
        app = web.Application()
        app.router.add_post("/_relay/{to}", self._relay)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self.runner, self.url = loop.call(loop.serve(app))
        self.session: ClientSession = loop.call(self._session())

    async def _session(self) -> ClientSession:
        return ClientSession()

    async def _forward(self, request: web.Request) -> web.Response:
        raw = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        if request.method == "POST" and request.rel_url.path.endswith("/webhooks") and raw:
            body = json.loads(raw)
            if isinstance(body, dict) and body.get("url"):
                body["url"] = f"{self.url}/_relay/{quote(body['url'], safe='')}"
                raw = json.dumps(body).encode()
        async with self.session.request(
            request.method,
            self.upstream + request.rel_url.path,
            params=request.rel_url.query,
            data=raw or None,
            headers=headers,
        ) as answer:
            status, body_raw = answer.status, await answer.read()
        plant = self.answers.get(request.headers.get(STEP_HEADER, ""))
        if plant is not None:
            status, changed = plant(status, json.loads(body_raw))
            body_raw = json.dumps(changed).encode()
        return web.Response(status=status, body=body_raw, content_type="application/json")

    async def _relay(self, request: web.Request) -> web.Response:
        to = unquote(request.match_info["to"])
        event = json.loads(await request.read())
        for out in self.webhooks(self.held, event):
            async with self.session.post(to, json=out) as answer:
                await answer.read()
        return web.Response(status=200)

    def close(self) -> None:
        self.loop.call(self.session.close())
        self.loop.call(self.runner.cleanup())
