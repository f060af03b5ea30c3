"""Namespaces: the rule that names one, how a request carries it, and the keys derived from it.

Pure: no aiohttp, no files. The routing rule lives here (and only here) because a proxy in front
of several servers must apply the same one without asking anyone: the namespace of a request is
read from its path prefix `/ns/{name}`, else from its credential, else it is `default`.

A credential of namespace N (every one but `default`'s) carries N right after its kind:

    sk_test_ns_N_...  pk_test_ns_N_...  sk_live_ns_N_...  pk_live_ns_N_...   keys
    ns_N_eyJ...                                                              access tokens
    rt_ns_N_...                                                              refresh tokens

A name has no `_`, so the name ends at the first `_` after `ns_`. `default`'s keys are the
fixtures' own, its access tokens start with `eyJ` and its refresh tokens never start `rt_ns_`
(`Authenticator` redraws them), so nothing of `default` matches.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from payorch.vocabulary import NAMESPACE_NAME_RULE
from simulator.domain.catalog import Catalog
from simulator.domain.errors import ApiError

DEFAULT = "default"
NAME_RULE = NAMESPACE_NAME_RULE
_NAME = re.compile(NAME_RULE)
PATH_PREFIX = "/ns/"
# Beside the namespaces' directories (<data dir>/namespaces/): the key of their key derivation.
# Not a valid name, so no namespace can be called that.
SECRET_FILE = ".secret"
# The rules as pattern text, also written into the proxy's configuration
# (simulator/cluster/nginx_config.py): one source, so the proxy and the server cannot disagree.
# The start of a credential of a namespace: the group is the name.
CREDENTIAL_RULE = r"(?:[sp]k_(?:test|live)_|rt_)?ns_(" + NAME_RULE + ")_"
# The same, after `Authorization: Bearer ` (the scheme is case-insensitive, as auth reads it).
AUTHORIZATION_RULE = r"\s*(?i:bearer)\s+" + CREDENTIAL_RULE
# A namespaced key or refresh token as a JSON string value (POST /auth/token and /auth/refresh
# carry their credential in the body).
BODY_CREDENTIAL_RULE = '"' + CREDENTIAL_RULE
_CREDENTIAL = re.compile(CREDENTIAL_RULE)
_AUTHORIZATION = re.compile(AUTHORIZATION_RULE)
_BODY_CREDENTIAL = re.compile(BODY_CREDENTIAL_RULE.encode())
_KEY_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_DERIVED_LENGTH = 24  # like the fixture keys' random part


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def check_name(name: str) -> str:
    """`name` if it is a namespace name, else 400 naming the rule."""
    if not valid_name(name):
        raise ApiError(
            "invalid_request",
            f"A namespace name matches {NAME_RULE} (lowercase letters, digits and '-', "
            f"at most 40 characters, not starting with '-'); got {name[:60]!r}.",
            param="name",
            details={"rule": NAME_RULE},
        )
    return name


def of_authorization(header: str | None) -> str | None:
    """The namespace an `Authorization` header's credential names; None: `default`'s or none."""
    if header is None or "ns_" not in header:  # most requests: one substring test
        return None
    match = _AUTHORIZATION.match(header)
    return match.group(1) if match else None


def of_credential(value: str) -> str | None:
    match = _CREDENTIAL.match(value)
    return match.group(1) if match else None


def of_body(body: bytes) -> str | None:
    """The namespace of the first namespaced credential in a JSON body (auth endpoints)."""
    match = _BODY_CREDENTIAL.search(body)
    return match.group(1).decode() if match else None


def split_path(path: str) -> tuple[str, str] | None:
    """`/ns/{name}/rest` -> (name, `/rest`); None when `path` has no namespace prefix. The name
    is not checked here: an invalid one is simply unknown."""
    if not path.startswith(PATH_PREFIX):
        return None
    name, slash, rest = path[len(PATH_PREFIX) :].partition("/")
    return name, slash + rest if slash else "/"


def token_prefix(name: str) -> str:
    """What an access token issued by namespace `name` starts with ("" for `default`)."""
    return "" if name == DEFAULT else f"ns_{name}_"


def refresh_prefix(name: str) -> str:
    return "rt_" if name == DEFAULT else f"rt_ns_{name}_"


def derive_key(secret: bytes, name: str, fixture_key: str) -> str:
    """Namespace `name`'s counterpart of a fixture key: the same kind and environment, the name,
    then 24 characters of HMAC-SHA256 keyed by the server's namespace secret. The same name gives
    the same keys on every start of one data dir; without the secret they cannot be computed."""
    kind, environment, _ = fixture_key.split("_", 2)
    digest = hmac.new(secret, f"{name}/{fixture_key}".encode(), hashlib.sha256).digest()
    # One character per byte (byte mod 36: a slight bias, ~124 bits all the same).
    chars = [_KEY_ALPHABET[byte % 36] for byte in digest[:_DERIVED_LENGTH]]
    return f"{kind}_{environment}_ns_{name}_{''.join(chars)}"


def keyed_for(catalog: Catalog, secret: bytes, name: str) -> Catalog:
    """The catalog as namespace `name` serves it: the same merchants, methods and providers
    (shared, not copied), with every key replaced by its derived counterpart."""
    if name == DEFAULT:
        return catalog

    def derive(key: str) -> str:
        return derive_key(secret, name, key)

    return catalog.rekeyed(derive)


def key_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """Every credential of `catalog`, as `payorch keys --json` prints one (design.md 1.2)."""
    return [
        {
            "merchantId": c.merchant.id,
            "merchantName": c.merchant.name,
            "shopId": c.shop.id if c.shop else None,
            "environment": c.environment,
            "publishableKey": c.publishable,
            "secretKey": c.secret,
        }
        for c in catalog.credentials
    ]


def refusal_before_loading(
    authorization: str | None, catalog: Catalog, name: str
) -> ApiError | None:
    """What namespace `name`'s own authentication would surely refuse, decided from its keys
    alone (derived from the name, `keyed_for`), so that a request that cannot pass does not
    load the world (issue 31): None when the world must judge (a key of its catalog, or a token
    of its form, whose signature only the world's store can check). The same codes and messages
    as `Authenticator.authenticate`, which still runs on every request admitted."""
    if not authorization or not authorization.strip():
        return ApiError("missing_credentials")
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value:
        return ApiError(
            "missing_credentials", "Send the credential as `Authorization: Bearer <token>`."
        )
    if value.startswith("rt_"):
        return ApiError("invalid_api_key", "A refresh token only works on POST /auth/refresh.")
    if value.startswith(("sk_", "pk_")):
        keys = catalog.by_publishable if value.startswith("pk_") else catalog.by_secret
        return None if value in keys else ApiError("invalid_api_key", "Unknown or rotated API key.")
    prefix = token_prefix(name)
    if not value.startswith(prefix):
        return ApiError("invalid_api_key", "This token was not issued by this namespace.")
    if value.count(".") != 2:
        return ApiError("invalid_token", "The token is malformed.")
    return None
