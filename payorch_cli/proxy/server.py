"""`payorch proxy`'s server: every request forwarded to the upstream with aiohttp's own client and
its answer streamed back unchanged; the webhook receiver; the flush route; the stop.

- Forwarding: the request's method, path and query as they came, its headers but the hop-by-hop
  ones (and `Host`, which names the upstream), its body (read whole first: API requests are
  small); aiohttp's client adds none of its own headers and decompresses nothing. The answer's
  status, reason and headers (the hop-by-hop ones aside) and its body, chunk by chunk as they
  come: a 10 MB answer never sits in memory, only its first `bodyLimit` bytes for the record.
- No answer: an upstream that cannot be reached (refused, no route, a TLS failure) is 502
  `upstream_unreachable`, one that sends nothing for `--timeout` seconds 504 `upstream_timeout`,
  in the API's error envelope; the exchange is recorded with no response, not comparable.
- Recording is off the request path: each exchange goes on a queue once its answer is sent;
  one task sends it to the recording process (payorch_cli/proxy/writer.py), which redacts and
  appends it. Past `BACKLOG` bytes waiting, the next answers wait for it rather than memory
  growing.
- Webhooks: `POST /_proxy/webhooks` records the delivery (its signature checked with
  `--webhook-secret` first) and forwards it, the same body and headers, to
  `--forward-webhooks-to`; the upstream gets that receiver's status (so it retries when the
  user's receiver fails), or 200 when nothing is forwarded (400 for a bad signature).
- `POST /_proxy/flush` (and SIGUSR1) writes the `end` line and the scenario so far; SIGINT and
  SIGTERM stop, flush and exit 0.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from payorch_cli.proxy.recorder import RawExchange, RawWebhook, Side, now_iso
from payorch_cli.proxy.writer import Writer
from payorch_cli.recording import format as fmt
from simulator.domain.errors import CATALOGUE

WEBHOOK_PATH = "/_proxy/webhooks"
FLUSH_PATH = "/_proxy/flush"
MAX_REQUEST_BODY = 256 * 1024 * 1024
# Bytes of records waiting for the recording process before the proxy waits for it: a burst
# faster than redaction (a client paging at full speed) is absorbed, a flood is held back.
BACKLOG = 64 * 1024 * 1024
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
    }
)
# aiohttp's client would add these when the request has none: the upstream must see the
# client's own headers only.
SKIP_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
FORWARD_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Config:
    upstream: str  # no trailing slash
    port: int
    out: Path
    webhook_secret: str | None = None
    forward_to: str | None = None
    insecure: bool = False
    timeout: float = 30.0
    body_limit: int = fmt.DEFAULT_BODY_LIMIT


@dataclass(slots=True)
class _Flush:
    done: asyncio.Future[dict[str, Any]]
    stop: bool = False


def error_body(code: str, message: str) -> dict[str, Any]:
    spec = CATALOGUE[code]
    request_id = "req_" + secrets.token_hex(12)
    error = {"code": code, "type": spec.type, "message": message, "requestId": request_id}
    return {"error": error}


class Proxy:
    def __init__(self, config: Config, writer: Writer, say: Callable[[str], None] = print) -> None:
        self.config = config
        self.writer = writer
        self.say = say
        self.queue: asyncio.Queue[RawExchange | RawWebhook | _Flush] = asyncio.Queue()
        self._backlog = 0  # bytes of bodies in the queue
        self._room = asyncio.Event()
        self._room.set()
        self._session: aiohttp.ClientSession | None = None
        self._shown = URL(config.upstream).with_user(None)

    # -- the app ----------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BODY)
        app.router.add_post(WEBHOOK_PATH, self.webhook)
        app.router.add_post(FLUSH_PATH, self.flush_route)
        app.router.add_route("*", "/{tail:.*}", self.forward)
        return app

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            verify: ssl.SSLContext | bool = (
                False if self.config.insecure else ssl.create_default_context()
            )
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=verify, limit=0),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.config.timeout, sock_read=self.config.timeout
                ),
            )
        return self._session

    # -- forwarding -------------------------------------------------------------------------

    async def forward(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        at = now_iso()
        body = await request.read()
        path, _, query = request.raw_path.partition("?")
        sent = Side(list(request.headers.items()), body[: self.config.body_limit + 1], len(body))
        unanswered = RawExchange(at, 0, request.method, path, query, sent, None, None)
        try:
            upstream = await self._send_upstream(request, body)
        except (TimeoutError, aiohttp.ServerTimeoutError):
            message = f"The upstream {self._shown} sent no answer in {self.config.timeout:g} s."
            return await self._refuse(fmt.UPSTREAM_TIMEOUT, message, unanswered, started)
        except (aiohttp.ClientError, OSError) as exc:
            message = f"The upstream {self._shown} could not be reached: {_reason(exc)}"
            return await self._refuse(fmt.UPSTREAM_UNREACHABLE, message, unanswered, started)
        answer, kept, size, error = await self._stream_back(request, upstream)
        raw = RawExchange(
            at,
            (time.perf_counter() - started) * 1000,
            request.method,
            path,
            query,
            sent,
            upstream.status,
            Side(list(upstream.headers.items()), kept, size),
            error,
        )
        await self.record(raw)
        if error is not None and request.transport is not None:
            request.transport.close()
        return answer

    async def _send_upstream(self, request: web.Request, body: bytes) -> aiohttp.ClientResponse:
        """The request as it came (hop-by-hop headers aside), to the upstream; its answer's
        head (the body is streamed by `_stream_back`)."""
        headers = CIMultiDict(
            (name, value)
            for name, value in request.headers.items()
            if name.lower() not in HOP_BY_HOP
        )
        return await self.session.request(
            request.method,
            URL(self.config.upstream + request.raw_path, encoded=True),
            headers=headers,
            data=body if body else None,
            allow_redirects=False,
            skip_auto_headers=SKIP_AUTO,
        )

    async def _stream_back(
        self, request: web.Request, upstream: aiohttp.ClientResponse
    ) -> tuple[web.StreamResponse, bytes, int, tuple[str, str] | None]:
        """The upstream's answer passed to the client chunk by chunk: the response, the first
        `bodyLimit` + 1 bytes kept for the record, the body's whole size, and the error when the
        upstream stopped mid-answer."""
        answer = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for name, value in upstream.headers.items():
            if name.lower() not in HOP_BY_HOP:
                answer.headers.add(name, value)
        kept = bytearray()
        size = 0
        limit = self.config.body_limit + 1
        error: tuple[str, str] | None = None
        try:
            await answer.prepare(request)
            async for chunk in upstream.content.iter_any():
                size += len(chunk)
                if len(kept) < limit:
                    kept += chunk[: limit - len(kept)]
                await answer.write(chunk)
            await answer.write_eof()
        except (TimeoutError, aiohttp.ClientError) as exc:
            # The upstream stopped mid-answer: the client's connection is cut, as it was.
            error = (fmt.UPSTREAM_TIMEOUT, f"The upstream stopped mid-answer: {_reason(exc)}")
        except ConnectionResetError:
            pass  # the client went away; what the upstream sent is still recorded
        finally:
            upstream.release()
        return answer, bytes(kept), size, error

    async def _refuse(
        self, code: str, message: str, raw: RawExchange, started: float
    ) -> web.StreamResponse:
        raw.duration_ms = (time.perf_counter() - started) * 1000
        raw.error = (code, message)
        await self.record(raw)
        self.say(f"{CATALOGUE[code].status} {code}: {message}")
        return web.json_response(error_body(code, message), status=CATALOGUE[code].status)

    # -- webhooks ---------------------------------------------------------------------------

    async def webhook(self, request: web.Request) -> web.StreamResponse:
        at = now_iso()
        body = await request.read()
        verdict = self._check(body, request.headers.get("X-Service-Signature"))
        forwarded: fmt.Forwarded | None = None
        status = 400 if verdict == "invalid" else 200
        if self.config.forward_to:
            headers = {
                name: value
                for name, value in request.headers.items()
                if name.lower() not in HOP_BY_HOP and name.lower() != "content-length"
            }
            try:
                async with self.session.post(
                    self.config.forward_to,
                    data=body,
                    headers=headers,
                    skip_auto_headers=SKIP_AUTO,
                    timeout=aiohttp.ClientTimeout(total=FORWARD_TIMEOUT),
                ) as answer:
                    await answer.read()
                    forwarded = {"status": answer.status, "error": None}
                    status = answer.status
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                forwarded = {"status": None, "error": _reason(exc)}
                status = 502
        await self.record(RawWebhook(at, list(request.headers.items()), body, verdict, forwarded))
        return web.json_response({"received": True, "signature": verdict}, status=status)

    def _check(self, body: bytes, header: str | None) -> fmt.SignatureCheck:
        if not self.config.webhook_secret:
            return "unchecked"
        from payorch.webhooks import SignatureVerificationError, verify

        try:
            verify(body, header, self.config.webhook_secret)
        except SignatureVerificationError:
            return "invalid"
        return "valid"

    # -- recording ---------------------------------------------------------------------------

    async def record(self, raw: RawExchange | RawWebhook) -> None:
        """Queue a record for the recording process; wait only while the backlog is full."""
        await self._room.wait()
        self._backlog += _size(raw)
        if self._backlog > BACKLOG:
            self._room.clear()
        self.queue.put_nowait(raw)

    async def write_records(self) -> None:
        """The one sender to the recording process, in order: records, and flushes between."""
        while True:
            item = await self.queue.get()
            try:
                if isinstance(item, _Flush):
                    item.done.set_result(await self.writer.flush(item.stop))
                else:
                    size = _size(item)
                    await self.writer.send(item, size)
                    self._backlog -= size
                    if self._backlog <= BACKLOG:
                        self._room.set()
            except (OSError, EOFError) as exc:  # the recording process is gone
                if isinstance(item, _Flush):
                    item.done.set_exception(exc)
            finally:
                self.queue.task_done()

    async def flush(self, stop: bool = False) -> dict[str, Any]:
        """Everything received so far on disk, the `end` line, and the scenario of it: the
        counts (`exchanges`, `webhooks`, `steps`...)."""
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        await self.queue.put(_Flush(done, stop))
        return await done

    async def flush_route(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(await self.flush())

    # -- running ----------------------------------------------------------------------------

    async def run(self, ready: Callable[[int], None]) -> dict[str, Any]:
        """Serve until SIGINT or SIGTERM; then the last flush, whose result this returns."""
        runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.config.port)
        await site.start()
        port = int(runner.addresses[0][1])
        writer = asyncio.create_task(self.write_records())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        flushes: set[asyncio.Task[dict[str, Any]]] = set()

        def flush_now() -> None:
            task = loop.create_task(self.flush())
            flushes.add(task)
            task.add_done_callback(flushes.discard)

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        loop.add_signal_handler(signal.SIGUSR1, flush_now)
        ready(port)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()
            try:
                summary = await self.flush(stop=True)
            except (OSError, EOFError) as exc:  # the recording process died (its stderr says)
                summary = {"failed": f"the recording process stopped ({_reason(exc)})"}
            writer.cancel()
            if self._session is not None:
                await self._session.close()
        return summary


def _size(raw: RawExchange | RawWebhook) -> int:
    if isinstance(raw, RawWebhook):
        return len(raw.body)
    return len(raw.request.kept) + (len(raw.response.kept) if raw.response else 0)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return (
            f"its TLS certificate was refused ({exc.certificate_error}); --insecure skips the check"
        )
    if isinstance(exc, TimeoutError):
        return "timed out"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]
