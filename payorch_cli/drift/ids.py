"""What a replay keeps between exchanges: which payorch credential stands for each of the
recording's credential placeholders, and which payorch id stands for each id the upstream
returned (design note (b) and (c) of issue 35).

Key placeholders (`sk_test_REDACTED_1`, `pk_live_REDACTED_2`) are given a payorch credential of
the same kind and environment the first time they appear, and keep it. Which one: the pair of a
placeholder already given (a publishable key used with a secret key in /auth/token), else the
shop already used in the other environment, else the merchant the recorded answer names, else a
merchant not used yet (two keys in one recording are most often two merchants), in the order the
namespace lists its keys. Tokens (`tok_REDACTED_3`, `rt_REDACTED_4`) and ids are learnt from the
answers: the value at the same place in payorch's answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from payorch_cli.drift.compare import ID_KEY, MADE_ID

KEY_PLACEHOLDER = re.compile(r"\b(sk|pk)_(test|live)_REDACTED_\d+\b")
TOKEN_PLACEHOLDER = re.compile(r"\b(tok|rt)_REDACTED_\d+\b")
ENVIRONMENTS = {"test": "sandbox", "live": "production"}
TOKEN_KEYS = frozenset({"accessToken", "refreshToken"})


@dataclass(frozen=True, slots=True)
class Hint:
    """What the recording tells about the credential of an exchange before it is replayed:
    the recorded answer (its status, the merchant it names) and the credentials (placeholders)
    that made the objects the request names."""

    answer: Any = None
    status: int = 200
    owners: tuple[str, ...] = ()


class IdMap:
    """Upstream value -> payorch value, for ids and credentials; applied to later requests."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self._keys = keys
        self.values: dict[str, str] = {}
        self._given: dict[str, dict[str, Any]] = {}  # key placeholder -> namespace key row
        self.owner: dict[str, str] = {}  # upstream id -> the key placeholder that made it

    # -- credentials ----------------------------------------------------------------------

    def credential(self, placeholder: str, hint: Hint | None = None) -> str | None:
        """The payorch key for a key placeholder (given on first sight); None when payorch has
        no credential of that kind and environment left."""
        if placeholder in self.values:
            return self.values[placeholder]
        match = KEY_PLACEHOLDER.fullmatch(placeholder)
        if match is None:
            return None
        kind, env = match.group(1), ENVIRONMENTS[match.group(2)]
        field = "secretKey" if kind == "sk" else "publishableKey"
        row = self._choose(field, env, hint or Hint())
        if row is None:
            return None
        self._given[placeholder] = row
        self.values[placeholder] = str(row[field])
        return self.values[placeholder]

    def _choose(self, field: str, env: str, hint: Hint) -> dict[str, Any] | None:
        used = {id(row) for row in self._given.values()}
        taken = {self.values[name] for name in self._given}
        free = [
            row
            for row in self._keys
            if row.get("environment") == env and row.get(field) and str(row[field]) not in taken
        ]
        if not free:
            return None
        merchant = _merchant_hint(hint.answer)
        if merchant is not None:
            named = [row for row in free if row.get("merchantId") == merchant]
            if named:
                return named[0]
        same_env = [row for row in self._given.values() if row.get("environment") == env]
        pairs = [row for row in free if id(row) in used]  # the other half of a given pair
        if pairs:
            return pairs[0]
        owners = [self._given[o] for o in hint.owners if o in self._given]
        owners = [row for row in owners if row.get("environment") == env]
        if owners and hint.status < 400:  # it sees another key's objects: the same merchant
            kin = [row for row in free if row.get("merchantId") == owners[0].get("merchantId")]
            if kin:
                return min(kin, key=lambda row: row.get("shopId") is not None)
        if not same_env and self._given:  # the same shop, in the other environment
            shops = {row.get("shopId") for row in self._given.values()}
            for row in free:
                if row.get("shopId") in shops and row.get("shopId") is not None:
                    return row
        merchants = {row.get("merchantId") for row in same_env}
        fresh = [row for row in free if row.get("merchantId") not in merchants]
        with_shop = [row for row in fresh or free if row.get("shopId") is not None]
        return (with_shop or fresh or free)[0]

    def any_sandbox_secret(self) -> str | None:
        """A sandbox secret key the replay uses for its own calls (the clock, events)."""
        for row in self._given.values():
            if row.get("environment") == "sandbox" and row.get("secretKey"):
                return str(row["secretKey"])
        for row in self._keys:
            if row.get("environment") == "sandbox" and row.get("secretKey"):
                return str(row["secretKey"])
        return None

    # -- ids --------------------------------------------------------------------------------

    def learn(self, upstream: Any, payorch: Any, maker: str | None = None, key: str = "") -> None:
        """Walk two answers side by side; an id (or token) the upstream returned maps to the
        value at the same place in payorch's answer. `maker`: the key placeholder of the
        request, kept as the ids' owner."""
        if isinstance(upstream, dict) and isinstance(payorch, dict):
            for name, value in upstream.items():
                if name in payorch:
                    self.learn(value, payorch[name], maker, name)
        elif isinstance(upstream, list) and isinstance(payorch, list):
            for left, right in zip(upstream, payorch, strict=False):
                self.learn(left, right, maker, key)
        elif (
            isinstance(upstream, str)
            and isinstance(payorch, str)
            and upstream != payorch
            and (
                TOKEN_PLACEHOLDER.fullmatch(upstream)
                # A key an answer hands out (a namespace's keys): payorch's at the same place.
                or KEY_PLACEHOLDER.fullmatch(upstream)
                or (key and (ID_KEY.search(key) or key in TOKEN_KEYS))
            )
        ):
            self.values.setdefault(upstream, payorch)
            if maker is not None:
                self.owner.setdefault(upstream, maker)

    def introduce(self, request_text: str, path: str, hint: Hint) -> str | None:
        """Give every key placeholder of a request (its headers and body as text) a payorch
        credential before the request is rewritten; the placeholder of its Authorization."""
        owners = tuple(self.owner[s] for s in path.split("/") if s in self.owner)
        hint = Hint(hint.answer, hint.status, owners)
        for match in KEY_PLACEHOLDER.finditer(request_text):
            self.credential(match.group(0), hint)
        found = KEY_PLACEHOLDER.search(request_text)
        return found.group(0) if found else None

    def apply(self, value: Any, hint: Hint | None = None) -> Any:
        """A request body with every known id and placeholder replaced (whole strings, and
        placeholders inside strings such as `Bearer sk_test_REDACTED_1`)."""
        if isinstance(value, dict):
            return {name: self.apply(item, hint) for name, item in value.items()}
        if isinstance(value, list):
            return [self.apply(item, hint) for item in value]
        if isinstance(value, str):
            return self.text(value, hint)
        return value

    def text(self, value: str, hint: Hint | None = None) -> str:
        if value in self.values:
            return self.values[value]
        if "REDACTED" in value:
            value = KEY_PLACEHOLDER.sub(lambda m: self.credential(m.group(0), hint) or m[0], value)
            value = TOKEN_PLACEHOLDER.sub(lambda m: self.values.get(m.group(0), m[0]), value)
        return value

    def path(self, path: str) -> tuple[str, list[str]]:
        """A request path with known ids replaced, segment by segment, and the segments that
        look like ids the recording never showed being made (the recording's side to fix)."""
        parts = []
        unknown = []
        for segment in path.split("/"):
            if segment in self.values:
                parts.append(quote(self.values[segment], safe=""))
            else:
                if MADE_ID.match(segment):
                    unknown.append(segment)
                parts.append(segment)
        return "/".join(parts), unknown

    def query(self, query: str) -> str:
        if not query:
            return ""
        pairs = parse_qsl(query, keep_blank_values=True)
        return urlencode([(name, self.text(value)) for name, value in pairs])


def _merchant_hint(answer: Any) -> str | None:
    """The merchant a recorded answer names (/auth/token's `merchant.id`, /me's `id`...)."""
    if not isinstance(answer, dict):
        return None
    merchant = answer.get("merchant")
    if isinstance(merchant, dict) and isinstance(merchant.get("id"), str):
        return str(merchant["id"])
    if isinstance(answer.get("merchantId"), str):
        return str(answer["merchantId"])
    return None
