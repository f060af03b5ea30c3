"""A 1,000-step scenario through the real runner, against an in-process simulator.

Generates one scenario file of --steps sequential steps (a multiple of 10): blocks of ten that
create a payment (saving it), read it back with expectations, simulate it paid, wait for its
`payment.completed` webhook (signed, verified by the runner's receiver), read it again (saving the
body), try to pay it twice (400 `invalid_request`) and find it by `merchantOrderId` in the list;
then, by block, read the balance, meet a 422 and a 404 with their error codes, or create a second
payment, expire it and wait for its `payment.failed`, or advance the clock two days, read the
balance and refund half the payment (`${paid.amountLocal / 2}`). Every HTTP step has an `expect`
(statuses, `json` subsets with `$type`, `$gte`, `$contains`, `$regex` and `${...}`) and the
scenario subscribes its receiver to every event, as any scenario with `expect_event` does.

Each round runs the file the way `payorch scenario run FILE` does without --base-url (the loaded
scenario through `run_instances`: a fresh in-process simulator, a quiet reporter) and times it.
The baseline, in the same run and the same process, alternating with the runner's rounds, is the
same HTTP requests in the same order over one keep-alive `http.client` connection to a fresh
in-process simulator of the same host (subscription and its removal included; JSON decoded, ids
taken from the answers, statuses checked), waiting for the same webhooks at a bare receiver
(standard library, no signature check): the requests without the runner's interpretation.
Then `payorch scenario run FILE` once in a subprocess, wall time including the interpreter.

    python bench/scenario_steps.py [--steps 1000] [--rounds 5]
                                   [--write FILE]   # only write the scenario file and exit
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from payorch_cli.scenario.credentials import Credentials
from payorch_cli.scenario.host import host
from payorch_cli.scenario.reporters import QuietReporter
from payorch_cli.scenario.suite import load_paths, run_instances

SK = "sk_test_19g744zrbw5buqxqpxp5w4gj"  # the scenario's default credential (shp_mazul_tienda)
BLOCK = 10


# -- the scenario ------------------------------------------------------------------------------


def scenario_steps(blocks: int) -> list[dict[str, Any]]:
    """Ten steps a block; `direct_round` sends the same requests in the same order."""
    steps: list[dict[str, Any]] = []
    for k in range(blocks):
        amount = 10 + k % 40
        order = f"bench-${{run.id}}-{k}"
        steps += [
            {
                "name": f"create payment {k}",
                "create_payment": {
                    "amount": amount,
                    "paymentMethodId": "1001",
                    "merchantOrderId": order,
                    "userEmail": f"buyer{k}@example.com",
                },
                "expect": {
                    "json": {
                        "transactionId": {"$regex": "^TXN-"},
                        "status": "pending",
                        "amount": amount,
                        "currencyLocal": "MXN",
                    }
                },
                "save": {"tx": "transactionId", "p": "."},
            },
            {
                "get_payment": "${tx}",
                "expect": {
                    "json": {"id": "${tx}", "status": "pending", "amountLocal": "${p.amountLocal}"}
                },
            },
            {
                "simulate": {"payment": "${tx}", "action": "paid"},
                "expect": {
                    "json": {
                        "status": "completed",
                        "eventsFired": {"$contains": ["payment.completed"]},
                    }
                },
            },
            {"expect_event": {"type": "payment.completed", "match": {"data": {"id": "${tx}"}}}},
            {
                "get_payment": "${tx}",
                "expect": {"json": {"status": "completed", "fees": {"total": {"$gte": 0}}}},
                "save": {"paid": "."},
            },
            {
                "name": f"paying {k} twice is refused",
                "simulate": {"payment": "${tx}", "action": "paid"},
                "expect": {
                    "status": 400,
                    "error": {"code": "invalid_request", "details": {"requiredStatus": "pending"}},
                },
            },
            {
                "request": {
                    "method": "GET",
                    "path": "/payments",
                    "query": {"merchantOrderId": order},
                },
                "expect": {"json": {"pagination": {"total": 1}, "data": [{"id": "${tx}"}]}},
            },
        ]
        if k % 10 == 9:
            steps += [
                {"advance_clock": "2d"},
                {
                    "balance": {},
                    "expect": {"json": {"balance": {"available": {"$gt": 0}, "pending": 0}}},
                    "save": {"bal": "balance"},
                },
                {
                    "refund": {"payment": "${tx}", "amount": "${paid.amountLocal / 2}"},
                    "expect": {
                        "json": {
                            "transactionId": "${tx}",
                            "amount": "${paid.amountLocal / 2}",
                            "status": "pending",
                        }
                    },
                },
            ]
        elif k % 10 == 4:
            steps += [
                {
                    "create_payment": {"amount": amount, "paymentMethodId": "1001"},
                    "headers": {"Idempotency-Key": f"bench-${{run.id}}-{k}-b"},
                    "save": {"tx2": "transactionId"},
                },
                {
                    "simulate": {"payment": "${tx2}", "action": "expired"},
                    "expect": {"json": {"id": "${tx2}", "eventsFired": ["payment.failed"]}},
                },
                {"expect_event": {"type": "payment.failed", "match": {"data": {"id": "${tx2}"}}}},
            ]
        else:
            steps += [
                {
                    "balance": {},
                    "expect": {"json": {"balance": {"available": {"$type": "number"}}}},
                },
                {
                    "create_payment": {"amount": amount, "paymentMethodId": "nope"},
                    "expect": {"status": 422, "error": "cascade_exhausted"},
                },
                {
                    "get_payment": f"TXN-missing-{k}",
                    "expect": {"status": 404, "error": {"code": "transaction_not_found"}},
                },
            ]
    return steps


def write_scenario(path: Path, steps: int) -> None:
    document = {
        "scenario": f"bench: {steps} sequential steps",
        "tags": ["bench"],
        "steps": scenario_steps(steps // BLOCK),
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100))


# -- the baseline: the same requests, no runner --------------------------------------------------


class BareReceiver:
    """Answers 200 (keep-alive), remembers (type, data.id) of each delivery; no signature
    check."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like the runner's receiver

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with receiver.changed:
                    receiver.seen.append((body["type"], body["data"]["id"]))
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait(self, event_type: str, ident: str, timeout: float = 5.0) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: (event_type, ident) in self.seen, timeout):
                raise AssertionError(f"no {event_type} for {ident}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Direct:
    def __init__(self, base_url: str) -> None:
        self.conn = http.client.HTTPConnection(*base_url.removeprefix("http://").split(":"))
        self.requests = 0

    def send(self, method: str, path: str, body: Any = None, status: int = 200, **headers: str):
        headers = {"Authorization": f"Bearer {SK}", "Accept": "application/json", **headers}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        target = path if path.startswith("/_sim/") else "/api/v1" + path
        self.conn.request(method, target, payload, headers)
        response = self.conn.getresponse()
        data = json.loads(response.read())
        self.requests += 1
        assert response.status == status, (method, target, response.status, data)
        return data


def direct_round(base_url: str, blocks: int, run_id: str) -> int:
    """The requests `scenario_steps` makes the runner send, in order; returns their count."""
    receiver = BareReceiver()
    client = Direct(base_url)
    try:
        hook = client.send("POST", "/webhooks", {"url": receiver.url, "events": "*"}, 201)
        for k in range(blocks):
            amount = 10 + k % 40
            order = f"bench-{run_id}-{k}"
            body = {
                "amount": amount,
                "paymentMethodId": "1001",
                "merchantOrderId": order,
                "userEmail": f"buyer{k}@example.com",
            }
            tx = client.send("POST", "/payments", body)["transactionId"]
            client.send("GET", f"/payments/{tx}")
            client.send("POST", f"/payments/{tx}/simulate", {"action": "paid"})
            receiver.wait("payment.completed", tx)
            paid = client.send("GET", f"/payments/{tx}")
            client.send("POST", f"/payments/{tx}/simulate", {"action": "paid"}, 400)
            client.send("GET", f"/payments?merchantOrderId={order}")
            if k % 10 == 9:
                client.send("POST", "/_sim/clock/advance", {"seconds": 172800})
                client.send("GET", "/me/balance")
                client.send("POST", f"/payments/{tx}/refund", {"amount": paid["amountLocal"] / 2})
            elif k % 10 == 4:
                body = {"amount": amount, "paymentMethodId": "1001"}
                key = f"bench-{run_id}-{k}-b"
                tx2 = client.send("POST", "/payments", body, 200, **{"Idempotency-Key": key})
                tx2 = tx2["transactionId"]
                client.send("POST", f"/payments/{tx2}/simulate", {"action": "expired"})
                receiver.wait("payment.failed", tx2)
            else:
                client.send("GET", "/me/balance")
                client.send("POST", "/payments", {"amount": amount, "paymentMethodId": "nope"}, 422)
                client.send("GET", f"/payments/TXN-missing-{k}", None, 404)
        client.send("DELETE", f"/webhooks/{hook['id']}")
        return client.requests
    finally:
        client.conn.close()
        receiver.close()


# -- measuring ---------------------------------------------------------------------------------


def runner_round(path: Path, credentials: Credentials) -> tuple[float, float, int]:
    """(load seconds, run seconds, requests sent), as `payorch scenario run FILE` does it; the
    run includes starting and stopping its in-process simulator (1-2 ms)."""
    began = time.perf_counter()
    loaded = load_paths([path], credentials)
    assert not loaded.errors, loaded.errors
    instances = [i for s in loaded.scenarios for i in s.instances()]
    loaded_at = time.perf_counter()
    results, _ = run_instances(instances, QuietReporter(), credentials, None, None)
    ended = time.perf_counter()
    result = results[0]
    if not result.passed:
        failed = result.failed_step
        problem = result.error or (failed.failure if failed else "?")
        raise SystemExit(f"the scenario failed: {problem}")
    steps = result.steps
    requests = sum(s.exchange is not None for s in steps) + 2  # + subscribe, unsubscribe
    return loaded_at - began, ended - loaded_at, requests


def direct_timed(blocks: int) -> tuple[float, int]:
    """(seconds, requests sent), starting and stopping a simulator like the runner's round."""
    began = time.perf_counter()
    simulator = host().start()
    try:
        requests = direct_round(simulator.base_url, blocks, "direct")
    finally:
        simulator.stop()
    return time.perf_counter() - began, requests


def spread(label: str, values: list[float], steps: int) -> None:
    low, mid, high = min(values), statistics.median(values), max(values)
    print(
        f"{label:<34} min {low:6.3f}  median {mid:6.3f}  max {high:6.3f} s   "
        f"{steps / mid:7.0f} steps/s"
    )


def cli_run(path: Path) -> tuple[float, str]:
    payorch = shutil.which("payorch", path=str(Path(sys.executable).parent))
    cmd = [payorch] if payorch else [sys.executable, "-m", "payorch_cli.main"]
    began = time.perf_counter()
    done = subprocess.run(
        [*cmd, "scenario", "run", str(path)], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        lines = done.stdout.splitlines()
        at = next((n for n, line in enumerate(lines) if line.startswith("  FAIL")), 0)
        shown = "\n".join(lines[at : at + 40])
        raise SystemExit(f"payorch scenario run failed:\n{shown}\n{done.stderr}")
    return wall, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", type=Path, help="write the scenario file here and exit")
    args = parser.parse_args()
    if args.steps % BLOCK:
        parser.error(f"--steps must be a multiple of {BLOCK}")
    blocks = args.steps // BLOCK
    if args.write:
        write_scenario(args.write, args.steps)
        print(f"wrote {args.write}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "steps.scenario.yaml"
        write_scenario(path, args.steps)
        credentials = Credentials.builtin()
        host().start().stop()  # imports and fixtures, paid once per process
        runner_round(path, credentials)  # warm-up, both sides
        direct_timed(blocks)
        loads, runs, totals, directs = [], [], [], []
        for _ in range(args.rounds):
            load, run, sent = runner_round(path, credentials)
            loads.append(load)
            runs.append(run)
            totals.append(load + run)
            seconds, direct_sent = direct_timed(blocks)
            directs.append(seconds)
        assert sent == direct_sent, (sent, direct_sent)
        print(
            f"{args.steps} steps ({sent} HTTP requests, {blocks + blocks // 10} webhooks awaited), "
            f"{args.rounds} rounds, in-process simulator"
        )
        spread("runner: run the steps", runs, args.steps)
        spread("runner: load + check the file", loads, args.steps)
        spread("runner: load + run", totals, args.steps)
        spread("baseline: same requests, direct", directs, args.steps)
        print(
            f"ratio runner run / direct (medians): "
            f"{statistics.median(runs) / statistics.median(directs):.2f}"
        )
        wall, summary = cli_run(path)
        print(f"`payorch scenario run FILE` once: {wall:.2f} s wall (interpreter included)")
        print(f"  it said: {summary}")


if __name__ == "__main__":
    main()
