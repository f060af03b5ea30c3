"""`payorch webhooks audit URL --secret whsec_...`: attack your own webhook endpoint.

It sends one correctly signed delivery, which must be accepted (2xx), then hostile ones that
must all be refused (any non-2xx answer), and reports what the endpoint wrongly accepted.
Exit status 1 if anything was wrongly accepted, or the valid delivery was refused; 3 if nothing
answers at the URL (the audit stops at the first request that cannot be delivered).

The duplicate check re-sends the valid request byte for byte (same `X-Service-Delivery`, same
`t`, same signature). The service signs every attempt of a delivery with a new `t`, so only an
attacker replaying a captured request sends that; a retry of something already handled comes
with a new `t` and should be acknowledged with 2xx without being processed again.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from payorch_cli.options import ExitStatus, command_group, positive_seconds

app = command_group("Webhook tools.")

TOLERANCE = 300
# How far past the tolerance the stale and future timestamps are: a correct endpoint must refuse
# them however long the request takes to arrive and whatever its clock's small drift from ours.
# With t just 1 s past it (and `now` floored to the second), a correct endpoint accepted the
# future one whenever its check ran a second after the audit began: a slow endpoint, a busy
# machine (the suite's flaky test).
MARGIN = 30


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    title: str
    accept: bool  # what a correct endpoint does
    body: bytes
    signature: Callable[[int], str | None]  # the X-Service-Signature, signed when sent
    delivery_id: str
    hint: str

    def headers(self, now: int) -> dict[str, str]:
        return _headers(self.signature(now), self.delivery_id)


def _event(amount: float = 125.5) -> tuple[bytes, str]:
    """A realistic payment.completed envelope and a fresh delivery id."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    tx = "TXN-AUDIT" + secrets.token_hex(4).upper()
    envelope = {
        "id": "evt_" + secrets.token_hex(12),
        "type": "payment.completed",
        "apiVersion": "2026-05-01",
        "environment": "sandbox",
        "createdAt": now,
        "data": {"id": tx, "status": "completed", "amount": amount, "currency": "USD"},
    }
    return json.dumps(envelope, separators=(",", ":")).encode(), "dlv_" + secrets.token_hex(12)


def _headers(signature: str | None, delivery_id: str) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "payorch-webhooks-audit/1",
        "X-Service-Event": "payment.completed",
        "X-Service-Delivery": delivery_id,
    }
    if signature is not None:
        headers["X-Service-Signature"] = signature
    return headers


def build_cases(secret: str, old_secret: str | None, now: int) -> list[Case]:
    foreign = "whsec_" + secrets.token_urlsafe(32)
    return _genuine_cases(secret, now) + _hostile_cases(secret, old_secret, foreign)


def _genuine_cases(secret: str, now: int) -> list[Case]:
    """A correctly signed delivery, and the same bytes again (which must be refused)."""
    from payorch.webhooks import compute_signature as sig

    valid_body, valid_id = _event()
    valid = f"t={now},v1={sig(valid_body, secret, now)}"  # the duplicate repeats it exactly
    return [
        Case(
            "valid",
            "correctly signed delivery",
            True,
            valid_body,
            lambda _: valid,
            valid_id,
            "Verify HMAC-SHA256 of '<t>.<raw body>' keyed by the whole whsec_ secret, hex.",
        ),
        Case(
            "duplicate",
            "the valid request replayed byte for byte",
            False,
            valid_body,
            lambda _: valid,
            valid_id,
            "Remember (X-Service-Delivery, t) of accepted deliveries for the tolerance window "
            "and refuse an exact repeat; a retry carries a new t: ack it, do not reprocess.",
        ),
    ]


def _hostile_cases(secret: str, old_secret: str | None, foreign: str) -> list[Case]:
    """The deliveries an endpoint must refuse, each with the fix when it accepts one."""
    from payorch.webhooks import compute_signature as sig

    old = old_secret or foreign
    late, early = -TOLERANCE - MARGIN, TOLERANCE + MARGIN
    return [
        _hostile(
            "tampered-body",
            "body changed after signing",
            "Compute the HMAC over the raw bytes received, not re-serialised JSON.",
            lambda b, t: f"t={t},v1={sig(b, secret, t)}",
            tamper=True,
        ),
        _hostile(
            "wrong-secret",
            "signed with another secret",
            "Compare the signature with the HMAC made with YOUR secret.",
            lambda b, t: f"t={t},v1={sig(b, foreign, t)}",
        ),
        _hostile(
            "stale-timestamp",
            f"t {TOLERANCE + MARGIN} s in the past (correctly signed)",
            f"Refuse t older than {TOLERANCE} s: it is a replay.",
            lambda b, t: f"t={t + late},v1={sig(b, secret, t + late)}",
        ),
        _hostile(
            "future-timestamp",
            f"t {TOLERANCE + MARGIN} s in the future (correctly signed)",
            f"Refuse t more than {TOLERANCE} s ahead too: check |now - t|, not now - t.",
            lambda b, t: f"t={t + early},v1={sig(b, secret, t + early)}",
        ),
        _hostile(
            "missing-header",
            "no X-Service-Signature header",
            "Refuse a delivery without a signature header.",
            None,
        ),
        _hostile(
            "old-secret-v0-only",
            "only a v0 signature with " + ("--old-secret" if old_secret else "a foreign secret"),
            "Accept only a signature made with a secret you hold, and drop the old secret "
            "once the 24-hour rotation grace is over.",
            lambda b, t: f"t={t},v0={sig(b, old, t)}",
        ),
        _hostile(
            "truncated-signature",
            "v1 cut to its first 32 hex digits",
            "Compare the whole signature in constant time (hmac.compare_digest), not a prefix.",
            lambda b, t: f"t={t},v1={sig(b, secret, t)[:32]}",
        ),
        _hostile(
            "missing-timestamp",
            "v1 present but no t=",
            "Refuse a header without t=: the signature must cover the timestamp.",
            lambda b, t: f"v1={sig(b, secret, t)}",
        ),
    ]


def _hostile(
    name: str,
    title: str,
    hint: str,
    header: Callable[[bytes, int], str] | None,
    *,
    tamper: bool = False,
) -> Case:
    """A case whose signature `header(body, now)` makes when it is sent."""
    body, delivery_id = _event()
    signed = body
    if tamper:
        body = body.replace(b'"amount":125.5', b'"amount":1255.0')

    def signature(at: int) -> str | None:
        return None if header is None else header(signed, at)

    return Case(name, title, False, body, signature, delivery_id, hint)


@dataclass(frozen=True, slots=True)
class Outcome:
    case: Case
    status: int | None
    duration_ms: float
    error: str | None

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def correct(self) -> bool:
        return self.error is None and self.accepted == self.case.accept


class Unreachable(Exception):
    """Nothing answered at the URL: the audit stops there (exit 3, like the other commands)."""


def run_cases(url: str, cases: list[Case], timeout: float) -> list[Outcome]:
    """Each case in turn. An endpoint that cannot be reached (refused, no such host, no
    connection within the timeout) stops the run with Unreachable, whose `args` are the reason
    and the outcomes before it; one that drops a connection or does not answer in time is a
    finding of that case."""
    from payorch_cli.client import ApiError, post_raw
    from payorch_cli.render.errors import unreachable_reason

    outcomes: list[Outcome] = []
    for case in cases:
        try:
            response = post_raw(url, case.body, case.headers(int(time.time())), timeout)
            outcomes.append(Outcome(case, response.status, response.duration_ms, None))
        except ApiError as exc:
            if exc.code == "invalid_url":
                raise typer.BadParameter(exc.message, param_hint="'URL'") from None
            if exc.code == "connection_failed":
                raise Unreachable(unreachable_reason(exc), outcomes) from None
            outcomes.append(Outcome(case, None, 0.0, exc.message))  # dropped: a finding
        except TimeoutError:
            outcomes.append(Outcome(case, None, timeout * 1000, f"no answer in {timeout:g} s"))
    return outcomes


def report(url: str, outcomes: list[Outcome], total: int | None = None) -> list[str]:
    """The checks that ran, one line each (a hint under each failure), and a summary; `total`
    is how many there were to run when the audit stopped early."""
    lines = [f"Webhook endpoint audit: {url}"]
    for outcome in outcomes:
        case = outcome.case
        if outcome.error:
            got = f"error: {outcome.error}"
        else:
            got = f"{'accepted' if outcome.accepted else 'refused'} ({outcome.status}, "
            got += f"{outcome.duration_ms:.0f} ms)"
        mark = "ok  " if outcome.correct else "FAIL"
        lines.append(f"  {mark}  {case.name:<20} {case.title}: {got}")
        if not outcome.correct:
            lines.append(f"        -> {case.hint}")
    wrongly = [o for o in outcomes if not o.case.accept and o.accepted]
    failed = [o for o in outcomes if not o.correct]
    if total is not None and total > len(outcomes):
        lines.append(f"Stopped after {len(outcomes)} of {total} checks.")
    elif not failed:
        lines.append(f"All {len(outcomes)} checks passed.")
    if failed:
        lines.append(
            f"{len(failed)} of {len(outcomes)} checks failed; wrongly accepted: "
            + (", ".join(o.case.name for o in wrongly) or "none")
            + "."
        )
        if not outcomes[0].correct:
            lines.append(
                "The valid delivery was not accepted: fix that first, or the other "
                "checks pass for the wrong reason."
            )
    return lines


def _rows(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    return [
        {
            "check": o.case.name,
            "expected": "accept" if o.case.accept else "refuse",
            "status": o.status,
            "error": o.error,
            "correct": o.correct,
        }
        for o in outcomes
    ]


@app.command("audit")
def audit(
    url: Annotated[str, typer.Argument(metavar="URL", help="Your webhook endpoint.")],
    secret: Annotated[str, typer.Option("--secret", help="The endpoint's signing secret.")],
    old_secret: Annotated[
        str | None,
        typer.Option("--old-secret", help="A rotated-out secret whose grace is over."),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", parser=positive_seconds, metavar="SECONDS", help="Seconds per request."
        ),
    ] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Test an endpoint with a valid delivery, then hostile ones.

    Reports what the endpoint wrongly accepted.
    """
    cases = build_cases(secret, old_secret, int(time.time()))
    try:
        outcomes = run_cases(url, cases, timeout)
    except Unreachable as stop:
        reason, done = stop.args
        if done and as_json:
            typer.echo(json.dumps(_rows(done), indent=2))
        elif done:
            for line in report(url, done, len(cases)):
                typer.echo(line)
        if done:
            problem = (
                f"{url} stopped answering at check {cases[len(done)].name!r} ({reason}); "
                f"{len(done)} of {len(cases)} checks ran"
            )
        else:
            problem = (
                f"cannot reach {url} ({reason}); nothing was checked. Is your endpoint running, "
                "and is the URL right?"
            )
        typer.echo(f"payorch webhooks audit: {problem}", err=True)
        raise typer.Exit(ExitStatus.UNREACHABLE) from None
    if as_json:
        typer.echo(json.dumps(_rows(outcomes), indent=2))
    else:
        for line in report(url, outcomes):
            typer.echo(line)
    raise typer.Exit(0 if all(o.correct for o in outcomes) else 1)
