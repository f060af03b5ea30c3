"""The one error catalogue: every code of the spec with its HTTP status, type and default message.

Domain code raises `ApiError(code, ...)`; exactly one HTTP middleware renders it into the envelope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# The API's surfaces whose statuses differ for one code (the spec: amount_invalid "400 (422 on
# payouts)"). The OpenAPI document names its operations' surface with `x-error-surface`.
PAYOUTS = "payouts"


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    status: int
    type: str
    message: str
    # Surface -> status where it differs from `status`; read-only, like the rest of the spec.
    surfaces: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def status_on(self, surface: str | None) -> int:
        """The HTTP status of this code on `surface` (None: the API's default surfaces)."""
        return self.surfaces.get(surface, self.status) if surface else self.status


_AUTH = "authentication_error"
_PERM = "permission_error"
_INVALID = "invalid_request_error"
_CARD = "card_error"
_RATE = "rate_limit_error"
_API = "api_error"

CATALOGUE: dict[str, ErrorSpec] = {
    # Authentication
    "missing_credentials": ErrorSpec(
        401, _AUTH, "No credentials: send Authorization: Bearer <key>."
    ),
    "invalid_api_key": ErrorSpec(401, _AUTH, "The API key or token is not valid."),
    "invalid_token": ErrorSpec(401, _AUTH, "The token is corrupt, altered or signed elsewhere."),
    "token_expired": ErrorSpec(401, _AUTH, "The token has expired; call POST /auth/token again."),
    "production_key_refused": ErrorSpec(
        400, _INVALID, "This endpoint is sandbox-only and refuses live credentials."
    ),
    "environment_mismatch": ErrorSpec(
        403, _PERM, "The credential's environment does not match the shop's; change the key."
    ),
    "shop_required": ErrorSpec(
        401, _AUTH, "This credential is not bound to a shop; pass shopId or use a shop key."
    ),
    "mobile_auth_failed": ErrorSpec(401, _AUTH, "Mobile login rejected."),
    "mobile_session_invalid": ErrorSpec(401, _AUTH, "Mobile token unusable; re-authenticate."),
    # Permission
    "key_kind_not_allowed": ErrorSpec(
        403, _PERM, "A publishable key cannot be used here; use a secret key."
    ),
    "forbidden": ErrorSpec(403, _PERM, "The resource belongs to another merchant or shop."),
    "permission_denied": ErrorSpec(403, _PERM, "Your role lacks the permission."),
    "merchant_suspended": ErrorSpec(403, _PERM, "The merchant account is suspended."),
    "shop_suspended": ErrorSpec(403, _PERM, "The shop is suspended."),
    "method_not_enabled_for_shop": ErrorSpec(
        403, _PERM, "The payment method is not enabled for this shop."
    ),
    # Invalid request
    "content_type_required": ErrorSpec(415, _INVALID, "Send the body as application/json."),
    "invalid_json": ErrorSpec(400, _INVALID, "The body is not valid JSON."),
    "invalid_request": ErrorSpec(400, _INVALID, "The request is not valid."),
    "missing_field": ErrorSpec(400, _INVALID, "A required field is missing."),
    "unsupported_method": ErrorSpec(400, _INVALID, "The method is not allowed for the shop."),
    "unsupported_country": ErrorSpec(400, _INVALID, "The method does not apply to this country."),
    "unsupported_currency": ErrorSpec(400, _INVALID, "The currency is not valid for the method."),
    "amount_invalid": ErrorSpec(
        400,
        _INVALID,
        "The amount must be a number greater than 0.",
        MappingProxyType({PAYOUTS: 422}),
    ),
    "amount_below_minimum": ErrorSpec(400, _INVALID, "The amount is below the method minimum."),
    "amount_above_maximum": ErrorSpec(400, _INVALID, "The amount is above the method maximum."),
    "idempotency_conflict": ErrorSpec(
        409, _INVALID, "This Idempotency-Key was used with a different request body."
    ),
    "card_declined": ErrorSpec(402, _CARD, "The card was declined."),
    "insufficient_funds": ErrorSpec(402, _CARD, "The card has insufficient funds."),
    "expired_card": ErrorSpec(402, _CARD, "The card has expired."),
    "fraud_blocked": ErrorSpec(402, _CARD, "The operation was flagged by the risk engine."),
    "kyc_required": ErrorSpec(402, _CARD, "The buyer must be verified for this amount or method."),
    "three_ds_required": ErrorSpec(402, _CARD, "Redirect the buyer to complete 3-D Secure."),
    "three_ds_failed": ErrorSpec(402, _CARD, "The 3-D Secure challenge failed."),
    "missing_required_fields": ErrorSpec(
        422, _INVALID, "The payment rail needs buyer data that is missing or malformed."
    ),
    "amount_out_of_limits": ErrorSpec(
        422, _INVALID, "The amount is outside the method's bounds after conversion."
    ),
    "balance_insufficient": ErrorSpec(422, _INVALID, "The available balance is not enough."),
    "fx_unavailable": ErrorSpec(422, _INVALID, "No FX rate for the presentment currency."),
    "currency_not_funded": ErrorSpec(
        422, _INVALID, "No payout balance in the method's currency: swap first."
    ),
    "payout_method_unavailable": ErrorSpec(422, _INVALID, "Unknown payout methodId."),
    "payout_not_found": ErrorSpec(404, _INVALID, "No such payout for the account."),
    "topup_not_found": ErrorSpec(404, _INVALID, "No such top-up for the account."),
    "deposit_account_not_found": ErrorSpec(404, _INVALID, "No such deposit account for the shop."),
    "deposit_accounts_unavailable": ErrorSpec(
        422, _INVALID, "The shop has no deposit method enabled."
    ),
    "deposit_method_required": ErrorSpec(
        422, _INVALID, "Several deposit methods are enabled: choose one with depositMethodId."
    ),
    "deposit_method_unavailable": ErrorSpec(
        422, _INVALID, "The depositMethodId is not enabled for the shop."
    ),
    "deposit_account_conflict": ErrorSpec(
        409, _INVALID, "More than one deposit account exists for this endUserRef."
    ),
    # Not in the spec's table: a transfer into a CLABE an operator disabled (decisions.md).
    "deposit_account_disabled": ErrorSpec(
        422, _INVALID, "The deposit account is disabled and takes no transfers."
    ),
    "payout_proof_unavailable": ErrorSpec(404, _INVALID, "No downloadable proof for that payout."),
    "settlement_already_paid": ErrorSpec(409, _INVALID, "The settlement is already paid."),
    "claim_already_resolved": ErrorSpec(409, _INVALID, "The claim is already resolved."),
    "requests_in_flight": ErrorSpec(
        409, _INVALID, "Requests are still running; nothing was reset. Retry when they are done."
    ),
    # Saved states (/_sim/state; docs/decisions.md "Snapshots").
    "restore_in_progress": ErrorSpec(
        409, _INVALID, "A reset or a restore is already running; retry when it is done."
    ),
    "snapshot_exists": ErrorSpec(
        409, _INVALID, "A saved state has that name; pass overwrite: true to replace it."
    ),
    "snapshot_incompatible": ErrorSpec(
        409, _INVALID, "The saved state was written by an incompatible version; save it again."
    ),
    "snapshot_corrupt": ErrorSpec(
        422, _INVALID, "The saved state's file is damaged; delete it and save it again."
    ),
    "fund_sandbox_only": ErrorSpec(
        400, _INVALID, "Sandbox funding is not available in production."
    ),
    "simulate_sandbox_only": ErrorSpec(400, _INVALID, "Simulation is not available in production."),
    "payload_too_large": ErrorSpec(413, _INVALID, "The request body is too large."),
    # Not in the spec's table: a body that did not arrive whole in time (decisions.md, "Slow
    # clients"); the connection is closed after the answer.
    "request_timeout": ErrorSpec(
        408, _INVALID, "The request body did not arrive in time; the connection is closed."
    ),
    "method_not_allowed": ErrorSpec(405, _INVALID, "The HTTP method is not allowed on this path."),
    "route_not_found": ErrorSpec(404, _INVALID, "No such route."),
    # Rate limit
    "rate_limited": ErrorSpec(429, _RATE, "Too many requests; retry after the Retry-After delay."),
    # API and server
    "shop_not_found": ErrorSpec(404, _INVALID, "The shop does not exist."),
    "merchant_not_found": ErrorSpec(404, _INVALID, "The merchant does not exist."),
    "transaction_not_found": ErrorSpec(404, _INVALID, "No such transaction."),
    "checkout_session_not_found": ErrorSpec(
        404, _INVALID, "The checkout session is unknown or expired."
    ),
    "checkout_session_already_completed": ErrorSpec(
        409, _INVALID, "The checkout session already created a transaction."
    ),
    "settlement_not_found": ErrorSpec(404, _INVALID, "No such settlement."),
    "claim_not_found": ErrorSpec(404, _INVALID, "No such claim."),
    "wallet_not_found": ErrorSpec(404, _INVALID, "No such payout wallet."),
    "withdrawal_not_found": ErrorSpec(404, _INVALID, "No such withdrawal."),
    # Not in the spec's table: the control plane's simulated providers (design.md 1.5).
    "provider_not_found": ErrorSpec(404, _INVALID, "No such simulated provider."),
    "incident_not_found": ErrorSpec(
        404, _INVALID, "The simulated provider has no such incident in force or scheduled."
    ),
    "webhook_not_found": ErrorSpec(404, _INVALID, "No such webhook subscription."),
    "snapshot_not_found": ErrorSpec(404, _INVALID, "No saved state has that name."),
    "namespace_not_found": ErrorSpec(404, _INVALID, "No namespace has that name."),
    # Namespace bounds and team mode (design.md 1.10, docs/decisions.md "Team mode").
    "namespace_limit_reached": ErrorSpec(
        403, _PERM, "The server holds as many namespaces as it allows; delete one first."
    ),
    "namespace_rate_limited": ErrorSpec(
        429, _RATE, "Too many namespaces created this minute; retry after the Retry-After delay."
    ),
    "owner_quota_exceeded": ErrorSpec(
        403, _PERM, "The owner holds as many namespaces as its quota allows; delete one first."
    ),
    "invalid_team_token": ErrorSpec(401, _AUTH, "The team token is unknown, revoked or expired."),
    "admin_required": ErrorSpec(403, _PERM, "Only the team server's admin token may do this."),
    "owner_token_required": ErrorSpec(
        403, _PERM, "In team mode, creating a namespace needs an owner token or the admin token."
    ),
    "namespace_storage_quota_exceeded": ErrorSpec(
        403, _PERM, "The namespace holds as many objects or bytes as it may; delete some first."
    ),
    "owner_not_found": ErrorSpec(404, _INVALID, "No owner has that name on this team server."),
    "team_token_not_found": ErrorSpec(404, _INVALID, "No team token has that id."),
    "namespace_name_taken": ErrorSpec(409, _INVALID, "Another owner's namespace has that name."),
    "team_mode_required": ErrorSpec(
        404, _INVALID, "Only a team server (payorch serve --team) has this route."
    ),
    "request_not_found": ErrorSpec(
        404, _INVALID, "No such request in the request log (it keeps the latest only)."
    ),
    "webhook_delivery_not_found": ErrorSpec(
        404, _INVALID, "No such delivery under that subscription."
    ),
    "cascade_exhausted": ErrorSpec(
        422, _API, "No provider in the cascade could accept the charge."
    ),
    "payment_instructions_unavailable": ErrorSpec(
        502, _API, "The provider returned neither a payment page nor instructions."
    ),
    "payout_dispatch_failed": ErrorSpec(422, _API, "The provider rejected the payout."),
    "deposit_account_provisioning_failed": ErrorSpec(
        502, _API, "No usable deposit account was returned; retry once."
    ),
    "topup_address_unavailable": ErrorSpec(503, _API, "Deposit address pool exhausted."),
    "service_unavailable": ErrorSpec(503, _API, "Temporary outage; retry with backoff."),
    "internal_error": ErrorSpec(500, _API, "Unhandled server fault; report the requestId."),
    # Not in the spec's table: `payorch proxy`'s own answers (payorch_cli/recording/format.py).
    "upstream_unreachable": ErrorSpec(502, _API, "The proxy could not reach the upstream."),
    "upstream_timeout": ErrorSpec(504, _API, "The upstream did not answer in time."),
}


class ApiError(Exception):
    """A failure the API reports in its envelope. `code` must be in the catalogue."""

    def __init__(
        self,
        code: str,
        message: str | None = None,
        *,
        param: str | None = None,
        details: dict[str, Any] | None = None,
        decline_code: str | None = None,
        headers: dict[str, str] | None = None,
        surface: str | None = None,
    ) -> None:
        spec = CATALOGUE[code]
        self.code = code
        # A code whose status depends on the surface (amount_invalid: 400, 422 on payouts).
        self.status = spec.status_on(surface)
        self.type = spec.type
        self.message = message or spec.message
        self.param = param
        self.details = details
        self.decline_code = decline_code
        self.headers = headers or {}
        super().__init__(f"{code}: {self.message}")

    def body(self, request_id: str) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "type": self.type, "message": self.message}
        if self.param is not None:
            error["param"] = self.param
        if self.decline_code is not None:
            error["decline_code"] = self.decline_code
        error["requestId"] = request_id
        if self.details is not None:
            error["details"] = self.details
        return {"error": error}


def invalid_request(
    message: str, issues: list[dict[str, str]], *, param: str | None = None, **extra: Any
) -> ApiError:
    """A schema violation: `details.issues` is a list of `{path, message}`."""
    details: dict[str, Any] = {"issues": issues, **extra}
    return ApiError("invalid_request", message, param=param, details=details)


def issues_error(
    issues: list[dict[str, str]], *, param: str | None = None, **extra: Any
) -> ApiError:
    """`invalid_request` whose message names every issue; `param` is the first one's path
    unless given."""
    return invalid_request(
        "; ".join(f"{i['path']}: {i['message']}" for i in issues),
        issues,
        param=param if param is not None else (issues[0]["path"] if issues else None),
        **extra,
    )


def unknown_action(allowed: Iterable[str]) -> ApiError:
    """A simulate `action` that is not one of `allowed`."""
    actions = list(allowed)
    return ApiError(
        "invalid_request",
        f"`action` must be one of {', '.join(actions)}.",
        param="action",
        details={"issues": [{"path": "action", "message": "unknown action"}], "allowed": actions},
    )
