"""The README's webhook verification snippets, as printed (the fenced block after each
`<!-- webhook-verify: LANG -->` marker), run against real deliveries of a running server:
a delivery verifies with its secret, and not when its body, secret or age is wrong; during a
secret rotation it verifies with the previous secret too (`v0`)."""

from __future__ import annotations

import base64
import json
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from payorch_cli.client import Client
from tests.cli.test_listen import pay_and_settle
from tests.cli.test_serve import PAYORCH as PAYORCH_CLI
from tests.cli.test_serve import Server

README = Path(__file__).resolve().parents[2] / "README.md"


def snippet(language: str) -> str:
    """The code block right after the README's `<!-- webhook-verify: language -->` marker."""
    found = re.search(
        rf"<!-- webhook-verify: {language} -->\n```[a-z]*\n(.*?)\n```", README.read_text(), re.S
    )
    assert found, f"no {language} snippet in the README"
    return found.group(1) + "\n"


@dataclass(frozen=True)
class Delivery:
    body: bytes
    signature: str

    @property
    def timestamp(self) -> int:
        return int(self.signature.split(",")[0].removeprefix("t="))


@dataclass(frozen=True)
class Case:
    """One call of the snippet's function and the answer it must give."""

    body: bytes
    header: str
    secret: str
    now: int
    expected: bool


class _Endpoint(BaseHTTPRequestHandler):
    received: queue.Queue[Delivery]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.put(Delivery(body, self.headers["X-Service-Signature"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def forged(header: str) -> str:
    """The header with the last hex digit of its signature changed."""
    last = header[-1]
    return header[:-1] + ("0" if last != "0" else "1")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Case]]:
    """Real deliveries, before and during a secret rotation, and the answers expected."""
    server = Server(tmp_path_factory.mktemp("signatures") / "data")
    _Endpoint.received = queue.Queue()
    endpoint = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=endpoint.serve_forever, args=(0.05,), daemon=True).start()
    try:
        client = Client(server.url)
        url = f"http://127.0.0.1:{endpoint.server_address[1]}/hooks"
        sub = client.create_webhook(url, ["payment.completed"])
        pay_and_settle(client)
        plain = _Endpoint.received.get(timeout=15)
        new_secret = client.post(f"/webhooks/{sub['id']}/rotate-secret")["secret"]
        pay_and_settle(client)
        rotated = _Endpoint.received.get(timeout=15)
    finally:
        endpoint.shutdown()
        server.stop()
    old_secret = sub["secret"]
    assert ",v0=" in rotated.signature and ",v0=" not in plain.signature
    t = plain.timestamp
    yield [
        Case(plain.body, plain.signature, old_secret, t, True),
        Case(plain.body, plain.signature, old_secret, t + 299, True),
        Case(plain.body, plain.signature, old_secret, t - 299, True),
        Case(plain.body, plain.signature, old_secret, t + 301, False),  # too old: a replay
        Case(plain.body, plain.signature, old_secret, t - 301, False),  # from the future
        Case(plain.body + b" ", plain.signature, old_secret, t, False),  # body changed
        Case(plain.body, plain.signature, new_secret, t, False),  # another secret
        Case(plain.body, forged(plain.signature), old_secret, t, False),  # signature changed
        Case(plain.body, "", old_secret, t, False),
        Case(rotated.body, rotated.signature, new_secret, rotated.timestamp, True),  # v1
        Case(rotated.body, rotated.signature, old_secret, rotated.timestamp, True),  # v0
    ]


def test_the_python_snippet_verifies_real_deliveries(cases: list[Case]) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(snippet("python"), "README.md (python snippet)", "exec"), namespace)
    verify_signature = namespace["verify_signature"]
    got = [verify_signature(c.body, c.header, c.secret, now=c.now) for c in cases]
    assert got == [c.expected for c in cases]


NODE_HARNESS = """
const { verifySignature } = require("./verify.js");
const cases = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const got = cases.map((c) =>
  verifySignature(Buffer.from(c.body, "base64"), c.header, c.secret, 300, c.now),
);
process.stdout.write(JSON.stringify(got));
"""

PHP_HARNESS = """<?php
require __DIR__ . '/verify.php';
$cases = json_decode(file_get_contents('php://stdin'), true);
$got = array_map(fn($c) => verify_signature(
    base64_decode($c['body']), $c['header'], $c['secret'], 300, $c['now']), $cases);
echo json_encode($got);
"""


def run_snippet(
    tmp_path: Path, command: list[str], files: dict[str, str], cases: list[Case]
) -> list[bool]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    payload = [
        {"body": base64.b64encode(c.body).decode(), "header": c.header, "secret": c.secret}
        | {"now": c.now}
        for c in cases
    ]
    result = subprocess.run(
        command,
        cwd=tmp_path,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    got: list[bool] = json.loads(result.stdout)
    return got


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_node_snippet_verifies_real_deliveries(tmp_path: Path, cases: list[Case]) -> None:
    files = {"verify.js": snippet("node"), "harness.js": NODE_HARNESS}
    got = run_snippet(tmp_path, ["node", "harness.js"], files, cases)
    assert got == [c.expected for c in cases]


@pytest.mark.skipif(shutil.which("php") is None, reason="php is not installed")
def test_the_php_snippet_verifies_real_deliveries(tmp_path: Path, cases: list[Case]) -> None:
    files = {"verify.php": snippet("php"), "harness.php": PHP_HARNESS}
    got = run_snippet(tmp_path, ["php", "harness.php"], files, cases)
    assert got == [c.expected for c in cases]


def test_a_receiver_made_of_the_python_snippet_passes_the_audit() -> None:
    """`payorch webhooks audit` (valid, replayed byte for byte, tampered, stale, foreign...)
    against an endpoint that does exactly what the README says: verify_signature, then
    is_replay, 2xx only when both pass."""
    namespace: dict[str, Any] = {}
    exec(compile(snippet("python"), "README.md (python snippet)", "exec"), namespace)
    secret = "whsec_" + "readme-receiver-secret"

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            header = self.headers.get("X-Service-Signature") or ""
            ok = namespace["verify_signature"](body, header, secret) and not namespace["is_replay"](
                self.headers.get("X-Service-Delivery") or "", header
            )
            self.send_response(200 if ok else 400)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
        done = subprocess.run(
            [*PAYORCH_CLI, "webhooks", "audit", url, "--secret", secret, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)
    assert rows and all(row["correct"] for row in rows), rows
    assert any(row["check"] == "duplicate" for row in rows)


REPLAY_NODE = """
const { isReplay } = require("./verify.js");
process.stdout.write(JSON.stringify([
  isReplay("dlv_1", "t=100,v1=ab"), isReplay("dlv_1", "t=100,v1=ab"),
  isReplay("dlv_1", "t=101,v1=cd"), isReplay("dlv_2", "t=100,v1=ab"),
]));
"""
REPLAY_PHP = """<?php
require __DIR__ . '/verify.php';
$id = 'dlv_' . bin2hex(random_bytes(8));
echo json_encode([is_replay($id, 't=100,v1=ab'), is_replay($id, 't=100,v1=ab'),
                  is_replay($id, 't=101,v1=cd'), is_replay($id . 'x', 't=100,v1=ab')]);
"""


@pytest.mark.parametrize(
    ("language", "command", "harness", "files"),
    [
        ("node", ["node", "replay.js"], REPLAY_NODE, ("verify.js", "replay.js")),
        ("php", ["php", "replay.php"], REPLAY_PHP, ("verify.php", "replay.php")),
    ],
)
def test_the_node_and_php_snippets_refuse_an_exact_repeat_only(
    tmp_path: Path, language: str, command: list[str], harness: str, files: tuple[str, str]
) -> None:
    if shutil.which(command[0]) is None:
        pytest.skip(f"{command[0]} is not installed")
    (tmp_path / files[0]).write_text(snippet(language))
    (tmp_path / files[1]).write_text(harness)
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # The same id and t again: a replay; a new t (a retry) or another delivery: not one.
    assert json.loads(done.stdout) == [False, True, False, False]
