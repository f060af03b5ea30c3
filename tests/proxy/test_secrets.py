"""Nothing secret is ever written (issue 35): 40 distinct secrets and personal values go through a
real `payorch proxy` in requests (headers, bodies, query, a form body), come back in answers (keys,
tokens, a webhook secret the upstream made) and in webhooks (the delivery's signature, the
event's buyer data); every byte the proxy wrote (recording, scenario, its output) and every byte
of the reports `payorch drift` makes of that recording (HTML, JSON, its output) is scanned for
each: none is found. The same run checks the webhook receiver: signatures checked with
`--webhook-secret`, deliveries forwarded unchanged, a forged one recorded as invalid."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

from payorch_cli.scenario.credentials import Credentials
from simulator.domain import documents
from tests.proxy.conftest import (
    PAYORCH,
    SANDBOX_SK,
    Receiver,
    Running,
    call,
    call_json,
    free_port,
    records,
)


def key(name: str) -> str:
    found = Credentials.builtin().by_name[name].key
    assert found is not None
    return found


def wait_for(condition: Callable[[], Any], seconds: float = 20) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_forty_planted_secrets_are_never_written(
    upstream: Running,
    proxied: Callable[..., Running],
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    rng = Random(35)
    planted: dict[str, str] = {
        "sandbox secret key": SANDBOX_SK,
        "publishable key": key("shp_mazul_tienda/sandbox/publishable"),
        "another shop's key": key("shp_lverde_loja"),
        "production key": key("shp_mazul_tienda/production"),
        "x-api-key header": "xak_9f8e7d6c5b4a39281706",
        "cookie": "session=c00k1e5ecretvalue77",
        "forwarded ip": "81.2.69.142",
        "basic credential": base64.b64encode(b"integrator:Sup3rSecretPass").decode(),
        "user field (--redact)": "LOY-5521-8841-0093",
        "password": "hunter2-Pa55word!",
        "user e-mail": "maria.gonzalez.1987@gmail.com",
        "user name": "Maria Jose Gonzalez",
        "user phone": "+5215512349876",
        "user ip": "189.203.44.12",
        "cpf": documents.generate_cpf(rng),
        "cnpj": documents.generate_cnpj(rng),
        "curp": documents.generate_curp(rng),
        "rfc": documents.generate_rfc(rng),
        "dni": "27845129",
        "cc": "1098765432",
        "card number": "4539578763621486",
        "address": "Rua das Flores 123, Apto 45",
        "customer first name": "Joaquina",
        "customer last name": "Ferreira-Lopes",
        "customer e-mail": "j.ferreira@hotmail.com",
        "customer phone": "+5511987654321",
        "end user name": "Rodrigo Hernandez Soto",
        "end user e-mail": "rodrigo.hs@yahoo.com.mx",
        "payer name": "Valentina Rojas Pinto",
        "payer e-mail": "vale.rojas@outlook.cl",
        "query token": "qs-secret-token-5567xyz",
        "form password": "F0rmPa55w0rdZ",
        "form e-mail": "form.user@proton.me",
    }
    # The subscription whose deliveries come to the proxy's receiver: made directly upstream,
    # its secret given to the proxy to check signatures with.
    port = free_port()
    hook = call_json(
        upstream.url,
        "POST",
        "/api/v1/webhooks",
        {"url": f"http://127.0.0.1:{port}/_proxy/webhooks", "events": "*"},
    )
    planted["webhook secret (--webhook-secret)"] = hook["secret"]
    proxy = proxied(
        "--webhook-secret",
        hook["secret"],
        "--forward-webhooks-to",
        receiver.url,
        "--redact",
        "loyaltyNumber",
        port=port,
    )
    base = proxy.url

    # Requests: headers, a JSON body with the API's buyer fields and more, a query, a form.
    call(
        base,
        "GET",
        "/api/v1/ping",
        headers={
            "X-Api-Key": planted["x-api-key header"],
            "Cookie": planted["cookie"],
            "X-Forwarded-For": planted["forwarded ip"],
        },
    )
    call(
        base,
        "GET",
        "/api/v1/ping",
        headers={"Authorization": "Basic " + planted["basic credential"]},
    )
    call(base, "GET", "/api/v1/ping", key=planted["another shop's key"])
    call(base, "GET", "/api/v1/payments", key=planted["production key"])
    payment = call_json(
        base,
        "POST",
        "/api/v1/payments",
        {
            "amount": 100,
            "paymentMethodId": "sbx_pix",
            "documentId": planted["cpf"],
            "userEmail": planted["user e-mail"],
            "userName": planted["user name"],
            "userPhone": planted["user phone"],
            "userIp": planted["user ip"],
        },
    )
    call(
        base,
        "POST",
        "/api/v1/payments",
        {
            "amount": 100,
            "paymentMethodId": "1001",
            "metadata": {
                "loyaltyNumber": planted["user field (--redact)"],
                "password": planted["password"],
                "cnpj": planted["cnpj"],
                "curp": planted["curp"],
                "rfc": planted["rfc"],
                "dni": planted["dni"],
                "cc": planted["cc"],
                "address": planted["address"],
                "card": {"number": planted["card number"]},
            },
        },
    )
    call(base, "GET", "/api/v1/payments?token=" + planted["query token"])
    form = f"password={planted['form password']}&email={planted['form e-mail']}".encode()
    call(
        base,
        "POST",
        "/api/v1/payments",
        raw=form,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    customer = {
        "firstName": planted["customer first name"],
        "lastName": planted["customer last name"],
        "email": planted["customer e-mail"],
        "phone": planted["customer phone"],
    }
    session = call_json(
        base,
        "POST",
        "/api/v1/checkout/sessions",
        {"amount": 40, "country": "MX", "customer": customer},
    )
    planted["checkout token"] = session["checkoutUrl"].rsplit("/", 1)[1]
    call(base, "GET", f"/api/v1/checkout/sessions/{planted['checkout token']}", key=None)
    # Answers: a token pair, a namespace's keys, another subscription's secret.
    pair = call_json(
        base,
        "POST",
        "/api/v1/auth/token",
        {"apiKey": planted["publishable key"], "secretKey": SANDBOX_SK},
        key=None,
    )
    planted["access token"] = pair["accessToken"]
    planted["refresh token"] = pair["refreshToken"]
    call(base, "GET", "/api/v1/ping", key=pair["accessToken"])
    namespace = call_json(base, "PUT", "/_sim/namespaces/px-secrets")
    planted["namespace secret key"] = namespace["keys"][0]["secretKey"]
    other = call_json(
        base, "POST", "/api/v1/webhooks", {"url": receiver.url + "/other", "events": "*"}
    )
    planted["another subscription's secret"] = other["secret"]
    # A deposit: an end user's account, then a transfer in, with the payer's data.
    method = call_json(base, "GET", "/api/v1/me/deposit-methods")["methods"][0]
    account = call_json(
        base,
        "POST",
        "/api/v1/me/deposit-accounts",
        {
            "endUserRef": "user-secrets-1",
            "name": planted["end user name"],
            "email": planted["end user e-mail"],
            "phone": planted["user phone"],
            "depositMethodId": method["depositMethodId"],
        },
    )["account"]
    call_json(
        base,
        "POST",
        "/_sim/deposits",
        {
            "clabe": account["clabe"],
            "amount": 500,
            "payerName": planted["payer name"],
            "payerEmail": planted["payer e-mail"],
        },
    )
    # Webhooks: the payment completes; its delivery comes through the proxy's receiver.
    tx = payment["transactionId"]
    call_json(base, "POST", f"/api/v1/payments/{tx}/simulate", {"action": "paid"})

    def delivered() -> Any:
        for headers, body in receiver.deliveries:
            event = json.loads(body)
            if event.get("type") == "payment.completed" and event["data"].get("id") == tx:
                return headers, body
        return None

    headers, body = wait_for(delivered)
    planted["a delivery's signature"] = headers["x-service-signature"]
    assert planted["user e-mail"] in body.decode()  # the event carries the buyer's data
    # A forged delivery: recorded as invalid, forwarded all the same (the user's receiver
    # decides), byte for byte.
    forged = b'{"id": "evt_forged", "type": "payment.completed", "data": {}}'
    call(
        base,
        "POST",
        "/_proxy/webhooks",
        raw=forged,
        key=None,
        headers={"X-Service-Signature": "t=1,v1=00"},
    )
    wait_for(lambda: any(b == forged for _, b in receiver.deliveries))
    assert proxy.stop() == 0

    assert len(planted) == 40 and len(set(planted.values())) == 40
    # The reports made of the recording are written too: drift's HTML page, its JSON and its
    # output (a replay on an embedded payorch; whatever its parity, it must run).
    reports = tmp_path / "reports"
    reports.mkdir()
    drift = subprocess.run(
        [*PAYORCH, "drift", str(tmp_path / "rec"), "--json", "--html", str(reports / "r.html")],
        capture_output=True,
        timeout=600,
    )
    assert drift.returncode in (0, 1), drift.stderr
    (reports / "drift.json").write_bytes(drift.stdout)
    (reports / "drift.err").write_bytes(drift.stderr)
    written = [p for p in (tmp_path / "rec").iterdir() if p.is_file()]
    written += [proxy.stdout, proxy.stderr, *reports.iterdir()]
    names = {p.name for p in written}
    assert names >= {"exchanges.jsonl", "scenario.yaml", "proxy.out", "r.html", "drift.json"}
    found = {
        (what, path.name)
        for path in written
        for what, value in planted.items()
        for form in {value, json.dumps(value)[1:-1]}
        if form.encode() in path.read_bytes()
    }
    assert found == set(), f"{len(found)} secrets written: {sorted(found)}"

    lines = records(tmp_path / "rec")
    hooks = [line for line in lines if line.get("kind") == "webhook"]
    completed = [
        h
        for h in hooks
        if h["eventType"] == "payment.completed" and h["body"].get("id") != "evt_forged"
    ]
    assert completed and all(h["signature"] == "valid" for h in completed)
    assert all(h["forwarded"] == {"status": 200, "error": None} for h in completed)
    assert all(h["headers"]["x-service-signature"] == "REDACTED" for h in hooks)
    forged_line = next(h for h in hooks if h["body"].get("id") == "evt_forged")
    assert forged_line["signature"] == "invalid"
    # Stable placeholders: the same e-mail is the same placeholder in the request and the event.
    created = next(
        line
        for line in lines
        if line.get("kind") == "exchange"
        and line["request"]["path"] == "/api/v1/payments"
        and (line["request"]["body"] or {}).get("paymentMethodId") == "sbx_pix"
    )
    email = created["request"]["body"]["userEmail"]
    assert email.startswith("redacted-") and email.endswith("@example.com")
    assert documents.is_valid_cpf(created["request"]["body"]["documentId"])
    assert any(email in json.dumps(h["body"]) for h in completed)
    scenario = (tmp_path / "rec" / "scenario.yaml").read_text()
    assert "expect_event" in scenario and "payment.completed" in scenario
