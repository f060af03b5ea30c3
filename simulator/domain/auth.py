"""Credentials: raw keys, access tokens (HS256 JWTs) and rotating refresh tokens.

Pure: the caller passes the current simulated time, the catalog and a refresh-token table.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import orjson

from simulator.domain.catalog import Catalog, Credential, Environment, Merchant, Shop
from simulator.domain.errors import ApiError
from simulator.domain.ids import hex_token, unused, urlsafe_token

# (merchantId, environment): the partition every stored record lives in.
Scope = tuple[str, str]

if TYPE_CHECKING:
    from simulator.domain.records import RefreshTokenRecord

ACCESS_TOKEN_SECONDS = 3600
REFRESH_TOKEN_SECONDS = 2_592_000
REFRESH_PREFIX = "rt_"

KeyKind = Literal["secret", "publishable"]


@dataclass(frozen=True, slots=True)
class Principal:
    merchant: Merchant
    shop: Shop | None
    environment: Environment
    key_kind: KeyKind
    key_id: str

    def can_see(self, record: Mapping[str, Any] | None) -> bool:
        """Whether a stored record (with merchantId, environment, shopId) is this caller's:
        its merchant and environment, and its shop too for a shop-bound credential."""
        return (
            record is not None
            and record["merchantId"] == self.merchant.id
            and record["environment"] == self.environment
            and (self.shop is None or record["shopId"] == self.shop.id)
        )

    @property
    def credential_id(self) -> str:
        """One key pair (or merchant-wide key): raw keys and their tokens share it."""
        shop = self.shop.id if self.shop else "*"
        return f"{self.merchant.id}/{shop}/{self.environment}"

    @property
    def scope(self) -> Scope:
        """(merchantId, environment): the partition every stored record lives in."""
        return (self.merchant.id, self.environment)


class RefreshTokens(Protocol):
    def get(self, doc_id: str) -> RefreshTokenRecord | None: ...
    def put(self, doc_id: str, doc: RefreshTokenRecord) -> None: ...


def environment_of_key(key: str) -> Environment | None:
    if key.startswith(("sk_test_", "pk_test_")):
        return "sandbox"
    if key.startswith(("sk_live_", "pk_live_")):
        return "production"
    return None


def mask_key(key: str) -> str:
    prefix = key[:8]
    return f"{prefix}****{key[-4:]}"


def key_id(secret_key: str) -> str:
    """Stable id of a secret key that does not reveal it (carried inside tokens)."""
    return "key_" + hashlib.sha256(secret_key.encode()).hexdigest()[:20]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _hash_refresh(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def reused_refresh_token() -> ApiError:
    """The answer to a rotated refresh token presented again (`Authenticator.refresh`)."""
    return ApiError(
        "invalid_token",
        "This refresh token was already used; every token issued from it is revoked. "
        "Call POST /auth/token again.",
    )


class Authenticator:
    def __init__(
        self,
        catalog: Catalog,
        signing_secret: bytes,
        refresh_tokens: RefreshTokens,
        rng: random.Random | None = None,
        *,
        token_prefix: str = "",
        refresh_prefix: str = REFRESH_PREFIX,
    ):
        self._catalog = catalog
        # A namespace's tokens start with its name (simulator/domain/namespaces.py), `default`'s
        # with none: its access tokens are bare JWTs, its refresh tokens `rt_` + random.
        self._token_prefix = token_prefix
        self._refresh_prefix = refresh_prefix
        self._secret = signing_secret
        self._refresh = refresh_tokens
        self._rng = rng  # draws `jti`s and refresh tokens
        self._by_key_id = {key_id(c.secret): c for c in catalog.credentials}
        # `Bearer <raw key>` headers already checked, with their principal: the catalog's keys,
        # merchants and shops never change while it serves, so neither does the answer. Only
        # keys that verified and only that one spelling of the header: no larger than the catalog.
        self._raw_key_headers: dict[str | None, Principal] = {}

    # -- issuing -------------------------------------------------------------------------------

    def issue_tokens(self, api_key: Any, secret_key: Any, now: float) -> dict[str, Any]:
        issues = [
            {"path": name, "message": "required string"}
            for name, value in (("apiKey", api_key), ("secretKey", secret_key))
            if not isinstance(value, str) or not value
        ]
        if issues:
            raise ApiError(
                "invalid_request",
                "`apiKey` (publishable key) and `secretKey` are required strings.",
                param=issues[0]["path"],
                details={"issues": issues},
            )
        assert isinstance(api_key, str) and isinstance(secret_key, str)
        env_pk, env_sk = environment_of_key(api_key), environment_of_key(secret_key)
        if env_pk and env_sk and env_pk != env_sk:
            raise ApiError(
                "invalid_api_key",
                "apiKey and secretKey belong to different environments.",
                param="apiKey",
            )
        credential = self._catalog.by_secret.get(secret_key)
        if credential is None or not secret_key.startswith("sk_"):
            raise ApiError("invalid_api_key", "Unknown secretKey.", param="secretKey")
        if credential.publishable is None or credential.publishable != api_key:
            raise ApiError(
                "invalid_api_key",
                "apiKey is not the publishable key of this secretKey's pair.",
                param="apiKey",
            )
        self._check_standing(credential.merchant, credential.shop)
        return self._token_pair(credential, now)

    def refresh(self, refresh_token: Any, now: float) -> dict[str, Any] | None:
        """A new token pair for `refresh_token`, which is revoked (rotation). Run inside the
        caller's store batch, like every write of a service.

        None when the token was rotated already: whoever holds the chain now may be a thief
        (OAuth 2.0 Security BCP, refresh token rotation), so every later token of it is revoked.
        That revocation must be committed although the request fails: the caller ends its batch,
        then answers `reused_refresh_token()`."""
        if not isinstance(refresh_token, str) or not refresh_token:
            raise ApiError(
                "invalid_request",
                "`refreshToken` is a required string.",
                param="refreshToken",
                details={"issues": [{"path": "refreshToken", "message": "required string"}]},
            )
        record = self._refresh.get(_hash_refresh(refresh_token))
        if record is not None and record["revoked"] and "next" in record:
            self._revoke_chain(record, now)
            return None
        if record is None or record["revoked"]:
            raise ApiError("invalid_token", "Unknown or already used refresh token.")
        if record["expiresAt"] <= now:
            raise ApiError("token_expired", "The refresh token has expired; call POST /auth/token.")
        credential = self._by_key_id.get(record["kid"])
        if credential is None:
            raise ApiError("invalid_api_key", "The key behind this refresh token was rotated.")
        self._check_standing(credential.merchant, credential.shop)
        pair = self._token_pair(credential, now)
        successor = _hash_refresh(pair["refreshToken"])
        self._refresh.put(
            record["id"], {**record, "revoked": True, "revokedAt": now, "next": successor}
        )
        pair["refreshExpiresIn"] = REFRESH_TOKEN_SECONDS
        return pair

    def owner_of_keys(self, api_key: Any, secret_key: Any) -> tuple[str, str] | None:
        """The merchant and environment a POST /auth/token names (its secret key, else its
        publishable key), or None when neither is a known key (the request log's owner)."""
        credential = None
        if isinstance(secret_key, str):
            credential = self._catalog.by_secret.get(secret_key)
        if credential is None and isinstance(api_key, str):
            credential = self._catalog.by_publishable.get(api_key)
        return None if credential is None else (credential.merchant.id, credential.environment)

    def owner_of_refresh(self, refresh_token: Any) -> tuple[str, str] | None:
        """The merchant and environment of a refresh token ever issued (used or not), or None."""
        if not isinstance(refresh_token, str) or not refresh_token:
            return None
        record = self._refresh.get(_hash_refresh(refresh_token))
        credential = None if record is None else self._by_key_id.get(record["kid"])
        return None if credential is None else (credential.merchant.id, credential.environment)

    def _revoke_chain(self, record: RefreshTokenRecord, now: float) -> None:
        """Revoke every token issued after `record` by rotation (each names its successor)."""
        seen = {record["id"]}
        successor = record.get("next")
        while successor is not None and successor not in seen:
            seen.add(successor)
            current = self._refresh.get(successor)
            if current is None:
                return
            if not current["revoked"]:
                self._refresh.put(current["id"], {**current, "revoked": True, "revokedAt": now})
            successor = current.get("next")

    def _token_pair(self, credential: Credential, now: float) -> dict[str, Any]:
        kid = key_id(credential.secret)
        claims = {
            "kid": kid,
            "mid": credential.merchant.id,
            "sid": credential.shop.id if credential.shop else None,
            "env": credential.environment,
            "iat": int(now),
            "exp": int(now) + ACCESS_TOKEN_SECONDS,
            "jti": hex_token(self._rng, 8),
        }
        refresh = unused(self._draw_refresh, lambda token: self._refresh.get(_hash_refresh(token)))
        digest = _hash_refresh(refresh)
        self._refresh.put(
            digest,
            {
                "id": digest,
                "kid": kid,
                "expiresAt": now + REFRESH_TOKEN_SECONDS,
                "revoked": False,
            },
        )
        return {
            "accessToken": self._sign(claims),
            "refreshToken": refresh,
            "tokenType": "Bearer",
            "expiresIn": ACCESS_TOKEN_SECONDS,
            "environment": credential.environment,
            "merchant": {"id": credential.merchant.id, "name": credential.merchant.name},
        }

    def _draw_refresh(self) -> str:
        while True:
            # A random part starting `ns_` would read as a namespace's token to the routing rule.
            token = urlsafe_token(self._rng, 32)
            if not token.startswith("ns_"):
                return self._refresh_prefix + token

    def _sign(self, claims: dict[str, Any]) -> str:
        header = _b64(orjson.dumps({"alg": "HS256", "typ": "JWT"}))
        payload = _b64(orjson.dumps(claims))
        signature = hmac.new(self._secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{self._token_prefix}{header}.{payload}.{_b64(signature)}"

    # -- verifying -----------------------------------------------------------------------------

    def known(self, authorization: str | None) -> Principal | None:
        """The principal of a `Bearer <raw key>` header `authenticate` already verified (it
        needs no clock), else None: ask `authenticate`."""
        return self._raw_key_headers.get(authorization)

    def authenticate(self, authorization: str | None, now: float) -> Principal:
        known = self._raw_key_headers.get(authorization)
        if known is not None:
            return known
        if not authorization or not authorization.strip():
            raise ApiError("missing_credentials")
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            raise ApiError(
                "missing_credentials", "Send the credential as `Authorization: Bearer <token>`."
            )
        if value.startswith(REFRESH_PREFIX):
            raise ApiError("invalid_api_key", "A refresh token only works on POST /auth/refresh.")
        if value.startswith(("sk_", "pk_")):
            principal = self._from_raw_key(value)
            if authorization == "Bearer " + value:
                self._raw_key_headers[authorization] = principal
            return principal
        prefix = self._token_prefix
        if prefix:
            if not value.startswith(prefix):
                raise ApiError("invalid_api_key", "This token was not issued by this namespace.")
            value = value[len(prefix) :]
        return self._from_token(value, now)

    def _from_raw_key(self, key: str) -> Principal:
        if key.startswith("pk_"):
            credential = self._catalog.by_publishable.get(key)
            kind: KeyKind = "publishable"
        else:
            credential = self._catalog.by_secret.get(key)
            kind = "secret"
        if credential is None:
            raise ApiError("invalid_api_key", "Unknown or rotated API key.")
        self._check_standing(credential.merchant, credential.shop)
        return Principal(
            credential.merchant, credential.shop, credential.environment, kind, mask_key(key)
        )

    def _from_token(self, token: str, now: float) -> Principal:
        parts = token.split(".")
        if len(parts) != 3:
            raise ApiError("invalid_token", "The token is malformed.")
        header, payload, signature = parts
        expected = hmac.new(self._secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        # Compare the encoded text, not decoded bytes: base64 decoding ignores stray characters,
        # padding and the unused low bits of the last character, so an altered signature could
        # still decode to the right bytes. Only the exact string this service issued verifies.
        valid = hmac.compare_digest(_b64(expected).encode(), signature.encode("utf-8", "replace"))
        try:
            claims = orjson.loads(_unb64(payload)) if valid else None
        except (ValueError, orjson.JSONDecodeError):
            raise ApiError("invalid_token", "The token is malformed.") from None
        if not valid or not isinstance(claims, dict):
            raise ApiError("invalid_token", "The token signature does not verify.")
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
            raise ApiError("token_expired")
        credential = self._by_key_id.get(claims.get("kid", ""))
        if credential is None:
            raise ApiError("invalid_api_key", "The key behind this token was rotated.")
        self._check_standing(credential.merchant, credential.shop)
        return Principal(
            credential.merchant,
            credential.shop,
            credential.environment,
            "secret",
            mask_key(credential.secret),
        )

    @staticmethod
    def _check_standing(merchant: Merchant, shop: Shop | None) -> None:
        if merchant.suspended:
            raise ApiError("merchant_suspended")
        if shop is not None and shop.suspended:
            raise ApiError("shop_suspended")


def standing_refusal(credential: Credential) -> ApiError | None:
    """What every request made with `credential` is answered, whatever it asks (a suspended
    merchant or shop, a promoted shop's other environment), or None for a usable key: the
    checks authentication runs, so `payorch keys` marks the fixtures' traps as the server
    treats them."""
    try:
        Authenticator._check_standing(credential.merchant, credential.shop)
        if credential.shop is not None:
            _check_shop_environment(credential.shop, credential.environment)
    except ApiError as exc:
        return exc
    return None


def check_environment(principal: Principal) -> None:
    """A shop promoted to one environment refuses credentials of the other."""
    if principal.shop is not None:
        _check_shop_environment(principal.shop, principal.environment)


def _check_shop_environment(shop: Shop, environment: Environment) -> None:
    if shop.promoted_to and shop.promoted_to != environment:
        raise ApiError(
            "environment_mismatch",
            f"Shop {shop.id} was promoted to {shop.promoted_to}; "
            f"use its {shop.promoted_to} credentials.",
        )


def require_secret(principal: Principal) -> None:
    if principal.key_kind != "secret":
        raise ApiError("key_kind_not_allowed")


def require_sandbox(principal: Principal) -> None:
    if principal.environment != "sandbox":
        raise ApiError("production_key_refused")


def resolve_shop(principal: Principal, catalog: Catalog, shop_id: Any = None) -> Shop:
    """The shop a request acts for: the credential's, or `shopId` for a merchant-wide key."""
    if shop_id is not None:
        if not isinstance(shop_id, str):
            raise ApiError("invalid_request", "`shopId` must be a string.", param="shopId")
        shop = catalog.shops.get(shop_id)
        if shop is None:
            raise ApiError("shop_not_found", f"No shop {shop_id}.", param="shopId")
        if shop.merchant_id != principal.merchant.id or (
            principal.shop is not None and principal.shop.id != shop.id
        ):
            raise ApiError("forbidden", f"Shop {shop_id} is not yours.", param="shopId")
        if shop.suspended:
            raise ApiError("shop_suspended")
        # A merchant-wide key names the shop in the body, so the middleware's environment check
        # (which only sees the credential's own shop) cannot catch a promoted shop here.
        _check_shop_environment(shop, principal.environment)
        return shop
    if principal.shop is None:
        raise ApiError("shop_required")
    return principal.shop
