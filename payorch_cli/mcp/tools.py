"""The MCP tools, as plain methods of `Toolbox` over a Sandbox: each one or a few HTTP calls, a
`Result` (a text an agent reads, the data as structured content) or a `ToolFailure` (the API's
error envelope and a hint). Each is declared once, by `@tool` on its method (its description,
read-only, destructive: `catalogue.py`); `TOOLS` is read off the class, in its order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import Field

from payorch_cli.mcp.access import ScenarioAccess
from payorch_cli.mcp.catalogue import (
    BEHAVIOURS_HELP,
    Behaviour,
    DeclineReason,
    EnvironmentArg,
    FindEnvironment,
    PaymentId,
    PaymentStatus,
    PayoutId,
    ProviderId,
    Result,
    StateName,
    ToolSpec,
    declared,
    tool,
)
from payorch_cli.mcp.catalogue import result as _result
from payorch_cli.mcp.sandbox import Environment, Sandbox, ToolFailure


class Toolbox:
    def __init__(self, sandbox: Sandbox, access: ScenarioAccess | None = None) -> None:
        self.sandbox = sandbox
        # What run_scenario may read of this host (access.py): by default no environment
        # variable and only files under the working directory.
        self.access = access or ScenarioAccess.of()

    # -- payments -------------------------------------------------------------------------------

    @tool("Create a payment (POST /payments) in sandbox, or in production to run the cascade.")
    def create_payment(
        self,
        amount: Annotated[
            float, Field(gt=0, description="In `currency` major units (USD by default).")
        ],
        payment_method_id: Annotated[
            str,
            Field(
                description="The method's 4-digit code (GET /payment-methods), e.g. 1001 SPEI "
                "Mexico, 1004 card Mexico, 1010 Pix Brazil.",
                pattern=r"^([0-9]{4}|sbx_[A-Za-z0-9_]+)$",
            ),
        ],
        environment: EnvironmentArg = "sandbox",
        currency: Annotated[
            str | None, Field(description="ISO-4217 code; default USD.", pattern=r"^[A-Z]{3}$")
        ] = None,
        country: Annotated[
            str | None,
            Field(description="ISO-2 or ISO-3; inferred from the method when omitted."),
        ] = None,
        merchant_order_id: Annotated[
            str | None, Field(max_length=120, description="Your own reference.")
        ] = None,
        user_name: Annotated[str | None, Field(max_length=120)] = None,
        user_email: Annotated[str | None, Field(max_length=254)] = None,
        document_id: Annotated[
            str | None, Field(description="The buyer's document; some rails need it.")
        ] = None,
    ) -> Result:
        body: dict[str, Any] = {"amount": amount, "paymentMethodId": payment_method_id}
        optional = {
            "currency": currency,
            "country": country,
            "merchantOrderId": merchant_order_id,
            "userName": user_name,
            "userEmail": user_email,
            "documentId": document_id,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        payment = self.sandbox.call("POST", "/payments", body, environment=environment)
        return _result(
            f"Created {environment} payment {payment.get('transactionId')}: "
            f"{payment.get('status')}, {payment.get('amountLocal')} "
            f"{payment.get('currencyLocal')}.",
            payment,
        )

    def _find(self, payment_id: str, environment: Environment | None) -> tuple[Environment, Any]:
        """The payment and the environment whose key reads it (sandbox first when not given)."""
        path = f"/payments/{quote(payment_id, safe='')}"
        if environment is not None:
            return environment, self.sandbox.get(path, environment=environment)
        tried: Environment = "sandbox" if self.sandbox.sandbox_key else "production"
        try:
            return tried, self.sandbox.get(path, environment=tried)
        except ToolFailure as failure:
            if failure.code != "transaction_not_found" or tried == "production":
                raise
            if self.sandbox.production() is None:
                raise
        return "production", self.sandbox.get(path, environment="production")

    @tool("Get one payment by its TXN- id (GET /payments/{id}).", read_only=True)
    def get_payment(self, payment_id: PaymentId, environment: FindEnvironment = None) -> Result:
        found_in, payment = self._find(payment_id, environment)
        return _result(f"Payment {payment_id} ({found_in}): {payment.get('status')}.", payment)

    @tool("List payments, newest first, with optional filters.", read_only=True)
    def list_payments(
        self,
        environment: EnvironmentArg = "sandbox",
        status: Annotated[PaymentStatus | None, Field(description="Only this status.")] = None,
        payment_method_id: Annotated[str | None, Field(pattern=r"^[0-9A-Za-z_]+$")] = None,
        merchant_order_id: str | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> Result:
        page = self.sandbox.get(
            "/payments",
            environment=environment,
            limit=limit,
            offset=offset,
            status=status,
            paymentMethodId=payment_method_id,
            merchantOrderId=merchant_order_id,
        )
        rows = page.get("data") or []
        total = (page.get("pagination") or {}).get("total", len(rows))
        lines = [f"{len(rows)} of {total} {environment} payments:"]
        lines += [
            f"  {p.get('id')}  {p.get('status'):<10} {p.get('amount')} USD  "
            f"{p.get('paymentMethod')} ({p.get('paymentMethodId')})  "
            f"{(p.get('timestamps') or {}).get('created', '')}"
            for p in rows
        ]
        return Result("\n".join(lines), page)

    @tool("Refund a completed payment, fully or in part.")
    def refund_payment(
        self,
        payment_id: PaymentId,
        amount: Annotated[
            float | None,
            Field(gt=0, description="Local-currency major units; omitted: all that remains."),
        ] = None,
        reason: Literal["requested_by_customer", "duplicate", "fraudulent", "other"] | None = None,
        environment: FindEnvironment = None,
    ) -> Result:
        found_in, _ = self._find(payment_id, environment)
        body: dict[str, Any] = {}
        if amount is not None:
            body["amount"] = amount
        if reason is not None:
            body["reason"] = reason
        path = f"/payments/{quote(payment_id, safe='')}/refund"
        refund = self.sandbox.call("POST", path, body, environment=found_in)
        return _result(
            f"Refund {refund.get('refundId')} of {refund.get('amount')} {refund.get('currency')}: "
            f"{refund.get('status')}.",
            refund,
        )

    # -- outcomes and time ----------------------------------------------------------------------

    @tool("Drive a sandbox payment's outcome: paid, failed, expired, refunded or chargeback.")
    def simulate_payment(
        self,
        payment_id: PaymentId,
        action: Annotated[
            Literal["paid", "failed", "expired", "refunded", "chargeback"],
            Field(
                description="paid/failed/expired need a pending payment; refunded and "
                "chargeback a completed one."
            ),
        ],
    ) -> Result:
        path = f"/payments/{quote(payment_id, safe='')}/simulate"
        answer = self.sandbox.call("POST", path, {"action": action})
        fired = ", ".join(answer.get("eventsFired") or []) or "no event"
        return _result(f"Payment {payment_id} is now {answer.get('status')} ({fired}).", answer)

    @tool("Drive a sandbox payout's outcome: completed, failed, rejected, refunded, returned...")
    def simulate_payout(
        self,
        payout_id: PayoutId,
        action: Literal[
            "completed", "paid", "failed", "rejected", "refunded", "returned", "processing"
        ],
    ) -> Result:
        path = f"/me/payout/send/{quote(payout_id, safe='')}/simulate"
        answer = self.sandbox.call("POST", path, {"action": action})
        payout = answer.get("payout") or {}
        return _result(f"Payout {payout_id} is now {payout.get('status')}.", answer)

    @tool(
        "Move the simulated clock forward, running every job that falls due (callbacks, "
        "retries, expiries)."
    )
    def advance_clock(
        self,
        seconds: Annotated[
            float,
            Field(gt=0, le=400 * 86400, description="How far to move, in seconds (600 = 10 min)."),
        ],
    ) -> Result:
        clock = self.sandbox.call("POST", "/_sim/clock/advance", {"seconds": seconds})
        return _result(f"Simulated time is now {clock.get('now')}.", clock)

    # -- providers ------------------------------------------------------------------------------

    @tool(
        "Change how a provider behaves in production from now on (behaviour, declines, "
        "latency, callbacks)."
    )
    def script_provider(
        self,
        provider_id: ProviderId,
        behaviour: Annotated[
            Behaviour | None,
            Field(description=f"{BEHAVIOURS_HELP}."),
        ] = None,
        decline_rate: Annotated[
            float | None, Field(ge=0, le=1, description="Share of charges declined.")
        ] = None,
        decline_reason: DeclineReason | None = None,
        seed: Annotated[int | None, Field(description="Seed of the decline draws.")] = None,
        latency_seconds: Annotated[
            float | None, Field(ge=0, description="Answer delay; over 30 s is a timeout.")
        ] = None,
        callback_after_seconds: Annotated[
            float | None,
            Field(ge=0, description="When its callback confirms a charge."),
        ] = None,
        callback_never: Annotated[
            bool, Field(description="It never calls back (the 5-minute poll settles).")
        ] = False,
        callback_outcome: Literal["paid", "failed", "completed", "rejected", "refunded", "returned"]
        | None = None,
        callback_mode: Literal["once", "duplicate"] | None = None,
    ) -> Result:
        body: dict[str, Any] = {}
        fields = {
            "behaviour": behaviour,
            "declineRate": decline_rate,
            "declineReason": decline_reason,
            "seed": seed,
            "latencySeconds": latency_seconds,
        }
        body.update({k: v for k, v in fields.items() if v is not None})
        callback: dict[str, Any] = {}
        if callback_never:
            callback["afterSeconds"] = None
        elif callback_after_seconds is not None:
            callback["afterSeconds"] = callback_after_seconds
        if callback_outcome is not None:
            callback["outcome"] = callback_outcome
        if callback_mode is not None:
            callback["mode"] = callback_mode
        if callback:
            body["callback"] = callback
        if not body:
            raise ToolFailure(
                "nothing_to_change",
                "Give at least one setting to change.",
                hint="behaviour, decline_rate, decline_reason, seed, latency_seconds or a "
                "callback_* argument.",
            )
        path = f"/_sim/providers/{quote(provider_id, safe='')}"
        provider = self.sandbox.call("PATCH", path, body)
        return _result(
            f"{provider_id} now: {provider.get('effectiveBehaviour')} (production only; the "
            "sandbox cascade always accepts).",
            provider,
        )

    @tool("Give a provider a behaviour (e.g. outage) for a window of simulated time.")
    def start_incident(
        self,
        provider_id: ProviderId,
        behaviour: Behaviour,
        duration_seconds: Annotated[
            float, Field(gt=0, description="How long, in simulated seconds (600 = 10 min).")
        ],
        starts_in_seconds: Annotated[
            float | None, Field(ge=0, description="Start this far from now; default now.")
        ] = None,
        decline_reason: DeclineReason | None = None,
    ) -> Result:
        body: dict[str, Any] = {"behaviour": behaviour, "durationSeconds": duration_seconds}
        if starts_in_seconds is not None:
            body["startsInSeconds"] = starts_in_seconds
        if decline_reason is not None:
            body["declineReason"] = decline_reason
        path = f"/_sim/providers/{quote(provider_id, safe='')}/incidents"
        incident = self.sandbox.call("POST", path, body)
        return _result(
            f"{provider_id}: {behaviour} from {incident.get('startsAt')} until "
            f"{incident.get('endsAt')} (simulated), incident {incident.get('id')}. Production "
            "charges fail over to the next provider of their method meanwhile.",
            incident,
        )

    @tool("End a provider's incidents now (one, or all of them).")
    def end_incident(
        self,
        provider_id: ProviderId,
        incident_id: Annotated[
            str | None,
            Field(
                description="One incident (inc_...); omitted: all of the provider's.",
                pattern=r"^inc_[A-Za-z0-9]+$",
            ),
        ] = None,
    ) -> Result:
        path = f"/_sim/providers/{quote(provider_id, safe='')}/incidents"
        if incident_id is not None:
            ended = [self.sandbox.call("DELETE", f"{path}/{incident_id}")]
        else:
            answer = self.sandbox.call("DELETE", path)
            ended = [i for i in answer.get("data") or [] if isinstance(i, dict)]
        text = (
            f"{provider_id}: ended {len(ended)} incident(s)."
            if ended
            else f"{provider_id}: no incident in force or scheduled; nothing to end."
        )
        return _result(text, {"data": ended})

    # -- observation ----------------------------------------------------------------------------

    @tool(
        "Explain a payment or payout: its cascade trace and the requests and events around it.",
        read_only=True,
    )
    def explain_payment(
        self,
        payment_id: Annotated[
            str,
            Field(
                description="A payment's TXN- id or a payout's po_ id.",
                pattern=r"^(TXN-|po_)[A-Za-z0-9]+$",
            ),
        ],
    ) -> Result:
        from payorch_cli.mcp.explain import explain

        text, data = explain(self.sandbox, payment_id)
        return Result(text, data)

    @tool(
        "The newest requests of the request log (status, error code, request id), errors "
        "only if asked.",
        read_only=True,
    )
    def recent_requests(
        self,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        errors_only: Annotated[bool, Field(description="Only answers of 400 and above.")] = False,
        status: Annotated[
            str | None,
            Field(
                description="A status class (4xx) or one status (404).",
                pattern=r"^[1-5]([xX]{2}|[0-9]{2})$",
            ),
        ] = None,
        path: Annotated[
            str | None, Field(description="A path prefix: /api/v1/payments, /_sim/clock...")
        ] = None,
        method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] | None = None,
    ) -> Result:
        from payorch_cli.render.requests import request_line

        query: dict[str, Any] = {"limit": limit, "path": path, "method": method}
        if status is not None:
            query["status"] = status
        rows: list[dict[str, Any]] = []
        if errors_only and status is None:  # 4xx and 5xx, merged newest first
            for klass in ("4xx", "5xx"):
                rows += self._log({**query, "status": klass})
            rows = sorted(rows, key=lambda r: str(r.get("at")), reverse=True)[:limit]
        else:
            rows = self._log(query)
        what = "errors" if errors_only else "requests"
        lines = [f"{len(rows)} newest {what} (newest first):"]
        lines += [f"  {' '.join(request_line(r).split())}" for r in rows]
        return Result("\n".join(lines), {"data": rows})

    def _log(self, query: dict[str, Any]) -> list[dict[str, Any]]:
        return list(self.sandbox.call("GET", "/_sim/requests", query=query)["data"])

    @tool(
        "Recent webhook deliveries of this merchant's subscriptions, with their results.",
        read_only=True,
    )
    def webhook_deliveries(
        self,
        webhook_id: Annotated[
            str | None, Field(description="One subscription; omitted: all of them.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Per subscription.")] = 20,
    ) -> Result:
        if webhook_id is not None:
            hooks = [self.sandbox.get(f"/webhooks/{quote(webhook_id, safe='')}")]
        else:
            hooks = self.sandbox.get("/webhooks", limit=100)["data"]
        if not hooks:
            return Result(
                "No webhook subscription for this merchant: your application subscribes with "
                "POST /api/v1/webhooks (no url: a managed inbox), then its deliveries show here.",
                {"data": []},
            )
        lines: list[str] = []
        out: list[dict[str, Any]] = []
        for hook in hooks:
            deliveries = self.sandbox.get(f"/webhooks/{hook['id']}/deliveries", limit=limit)["data"]
            out.append({"webhook": hook, "deliveries": deliveries})
            lines.append(f"{hook['id']} {hook.get('url') or '(managed inbox)'}:")
            for d in deliveries:
                last = (d.get("attempts") or [{}])[-1]
                answered = f"  last answer {last['httpStatus']}" if last.get("httpStatus") else ""
                lines.append(
                    f"  {d.get('id')}  {d.get('eventType')} ({d.get('eventId')})  "
                    f"{d.get('status')}  attempts={d.get('attemptCount')}{answered}"
                )
            if not deliveries:
                lines.append("  no delivery yet")
        return Result("\n".join(lines), {"data": out})

    @tool(
        "The sandbox at a glance: URL, simulated clock, providers and incidents, saved states.",
        read_only=True,
    )
    def sandbox_status(self) -> Result:
        clock = self.sandbox.get("/_sim/clock")
        providers = self.sandbox.get("/_sim/providers")["data"]
        states = self.sandbox.get("/_sim/state")["data"]
        lines = [
            f"Sandbox at {self.sandbox.api_url}"
            + (" (embedded, temporary)" if self.sandbox.embedded else ""),
            f"Simulated time: {clock.get('now')} (offset {clock.get('offsetSeconds')} s)",
            f"Providers ({len(providers)}; behaviours apply to production only):",
        ]
        for p in providers:
            incidents = [i for i in p.get("incidents") or [] if isinstance(i, dict)]
            extra = "".join(
                f"; incident {i.get('id')} {i.get('behaviour')} until {i.get('endsAt')}"
                for i in incidents
            )
            lines.append(
                f"  {p.get('id')}: {p.get('effectiveBehaviour', p.get('behaviour'))}{extra}"
            )
        lines.append(
            "Saved states: " + (", ".join(s["name"] for s in states) if states else "none")
        )
        data = {
            "baseUrl": self.sandbox.api_url,
            "namespace": self.sandbox.namespace,
            "embedded": self.sandbox.embedded,
            "clock": clock,
            "providers": providers,
            "states": states,
        }
        return Result("\n".join(lines), data)

    @tool(
        "Which state transitions, events and error codes the sandbox has produced so far.",
        read_only=True,
    )
    def coverage(
        self,
        unreached_only: Annotated[
            bool, Field(description="Only what was never reached, not the counts.")
        ] = False,
    ) -> Result:
        from payorch_cli.render.coverage import coverage_text, unreached

        report = self.sandbox.get("/_sim/coverage")
        data = {"unreached": unreached(report)} if unreached_only else report
        return Result(coverage_text(report), data)

    # -- state ----------------------------------------------------------------------------------

    @tool(
        "Put the sandbox back to its fixtures: data, providers, request log, clock.",
        destructive=True,
    )
    def reset_sandbox(self) -> Result:
        answer = self.sandbox.call("POST", "/_sim/reset")
        self.sandbox.call("POST", "/_sim/providers/reset")
        now = (answer.get("clock") or {}).get("now")
        return _result(
            f"Reset: back to the fixtures (providers too), request log empty, clock {now}.", answer
        )

    @tool("Save the whole sandbox and its clock under a name.")
    def save_state(self, name: StateName, overwrite: bool = False) -> Result:
        body: dict[str, Any] = {"name": name}
        if overwrite:
            body["overwrite"] = True
        saved = self.sandbox.call("POST", "/_sim/state", body)
        return _result(f"Saved state {name}.", saved)

    @tool("Put the sandbox back to a saved state (what happened since is gone).", destructive=True)
    def restore_state(self, name: StateName) -> Result:
        restored = self.sandbox.call("POST", f"/_sim/state/{quote(name, safe='')}/restore")
        return _result(f"Restored state {name}.", restored)

    # -- scenarios ------------------------------------------------------------------------------

    @tool(
        "Write the session's requests as a runnable scenario (YAML), ids saved and reused.",
        read_only=True,
    )
    def record_scenario(
        self,
        last: Annotated[
            int | None,
            Field(
                ge=1,
                description="Only the last N requests that become steps; omitted: "
                "everything since the start or last reset.",
            ),
        ] = None,
        name: Annotated[str, Field(max_length=200)] = "recorded session",
    ) -> Result:
        from payorch_cli.mcp.scenarios import record_session

        yaml_text, data = record_session(self.sandbox, last, name)
        return Result(yaml_text, data)

    @tool("Run a scenario (YAML text or a file path) against the sandbox; pass/fail per step.")
    def run_scenario(
        self,
        scenario_yaml: Annotated[
            str | None, Field(description="A scenario document (docs/scenarios.md), as YAML.")
        ] = None,
        path: Annotated[
            str | None,
            Field(
                description="Or a scenario file (or folder) under the server's scenario folders "
                "(by default its working directory)."
            ),
        ] = None,
    ) -> Result:
        from payorch_cli.mcp.scenarios import run

        text, data = run(self.sandbox, self.access, scenario_yaml, path)
        return Result(text, data)


# Every tool, as declared on its method, and those `--read-only` offers.
TOOLS: tuple[ToolSpec, ...] = declared(Toolbox)
READ_ONLY = frozenset(spec.name for spec in TOOLS if spec.read_only)
