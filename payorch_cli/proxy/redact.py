"""What `payorch proxy` replaces before a byte of traffic touches disk, and with what.

One `Redactor` per recording. It remembers every real value it replaced (in memory only, never
written) with its placeholder, so the same value is always the same placeholder within a
recording and the links between calls survive (a checkout token a response returned and a later
path used; a buyer's e-mail sent twice). Placeholders keep the shape of what they replace, so a
replay (the scenario, `payorch drift`) can send them where the real ones went:

- credentials keep their kind: `sk_test_REDACTED_1`, `pk_live_REDACTED_2`, `rt_REDACTED_3`,
  `whsec_REDACTED_4`, `cs_REDACTED_5` (a checkout session's token); an access token (a JWT)
  becomes `tok_REDACTED_6`; any other secret `REDACTED_7`;
- an e-mail `redacted-N@example.com`; a phone the same number of digits, `+555…N`; an IP an
  address of a documentation range (`198.18.x.y`, `2001:db8::N`); a name `Redacted Person X`;
  an address `N Example Street`;
- a document a valid synthetic document of the same kind (a CPF with its check digits for a
  CPF, a CNPJ, CURP or RFC likewise: simulator/domain/documents.py's generators), any other one
  the same shape with other characters; a card number a Luhn-valid test number of its length;
- signature headers `REDACTED` (they are worthless without the body and secret, and they are
  checked before redaction: the record keeps `valid`/`invalid`).

Where: headers (`Authorization`, cookies, API-key and token headers, forwarding IP headers,
signatures), JSON bodies by key (the keys are in the sets below, compared without case, `_` or
`-`, plus the user's `--redact` fields), and every string anywhere by its look (API keys, refresh
and access tokens, webhook secrets, checkout tokens and tokened links, e-mail addresses, card
numbers that pass the Luhn check), and any value already replaced, wherever it shows up again
(a document echoed in an error message). Text bodies (not JSON, or cut at the body limit) get
the same look-based pass and the `"key": "value"` / `key=value` pairs of the keys.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from random import Random
from typing import Any
from urllib.parse import parse_qsl, urlencode

from simulator.domain import documents

MAX_DEPTH = 256  # levels of a JSON body walked; a deeper one is redacted as text

CREDENTIAL_KEYS = frozenset(
    {
        "secretkey",
        "secret",
        "apikey",
        "publishablekey",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "token",
        "sessiontoken",
        "password",
        "passphrase",
        "clientsecret",
        "webhooksecret",
        "signingsecret",
        "privatekey",
        "authorization",
        "cvv",
        "cvc",
        "pin",
        "otp",
    }
)
EMAIL_WORD = "email"
PHONE_WORDS = ("phone", "mobile", "msisdn")
IP_KEYS = frozenset(
    {"ip", "ipaddress", "userip", "customerip", "clientip", "remoteip", "buyerip", "payerip"}
)
NAME_KEYS = frozenset(
    {
        "username",
        "fullname",
        "firstname",
        "middlename",
        "lastname",
        "surname",
        "payername",
        "buyername",
        "customername",
        "recipientname",
        "beneficiaryname",
        "holdername",
        "cardholdername",
        "accountholdername",
    }
)
PERSON_KINDS = ("email", "phone", "document")
# `name` is a person's inside an object under a key holding one of these words.
PERSON_WORDS = ("customer", "recipient", "buyer", "payer", "beneficiary", "holder", "user")
ADDRESS_KEYS = frozenset(
    {
        "address",
        "addressline1",
        "addressline2",
        "streetaddress",
        "street",
        "line1",
        "line2",
        "postalcode",
        "zipcode",
        "zip",
        "billingaddress",
        "shippingaddress",
    }
)
DOCUMENT_KEYS = frozenset(
    {
        "documentid",
        "document",
        "documentnumber",
        "cpf",
        "cnpj",
        "curp",
        "rfc",
        "dni",
        "cc",
        "cuit",
        "cuil",
        "rut",
        "nit",
        "ruc",
        "taxid",
        "nationalid",
        "ssn",
        "passport",
    }
)
CARD_KEYS = frozenset({"cardnumber", "pan"})
# Headers: replaced whole (credentials), `REDACTED` (signatures), their IPs (forwarding).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})
COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})
IP_HEADERS = frozenset(
    {"x-forwarded-for", "x-real-ip", "forwarded", "true-client-ip", "x-client-ip"}
)
SECRET_HEADER_WORDS = ("secret", "token", "password", "signature")
SIGNATURE_REDACTED = "REDACTED"
# Keys whose values are server-made ids: never read as card numbers (a CLABE has 18 digits).
ID_LIKE = re.compile(r"^(id|token|clabe|reference|barcode)$|(id|token|ref)$")

_CREDENTIAL = re.compile(
    r"\b((?:sk|pk)_(?:test|live)_|rt_|cs_|whsec_)([A-Za-z0-9_-]{8,})"
    r"|()(eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)"
    r"|((?:/_sim/provider/|/c/)[A-Za-z0-9_-]+\.)([A-Za-z0-9_-]{8,})"
)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_DIGITS = re.compile(r"(?<![\d])\d(?:[ -]?\d){12,18}(?![\d])")
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\b")
_TOKEN = re.compile(r"[A-Za-z0-9_@.+\-]{6,}")
# Nothing to find in it but itself: one lower-case word (a status, a method, `pix.payorch`).
_PLAIN_WORD = re.compile(r"[a-z]+(?:[.-][a-z]+)*")
_PLACEHOLDER = re.compile(r"REDACTED|redacted-\d+@example\.com|Redacted Person")


def norm(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def luhn_ok(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def test_card(length: int, n: int) -> str:
    """A Luhn-valid number of `length` digits starting with 4 (a test Visa), the n-th."""
    body = "4" + str(n).zfill(length - 2)[-(length - 2) :]
    for check in "0123456789":
        if luhn_ok(body + check):
            return body + check
    raise AssertionError("unreachable: one check digit always fits")


def _letters(n: int) -> str:
    out = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        out = chr(65 + rest) + out
    return out


def _same_shape(value: str, n: int) -> str:
    """Other characters of the same classes (digit, upper, lower) at the same places."""
    rng = Random(n)
    for _ in range(20):
        out = "".join(
            str(rng.randrange(10))
            if c.isdigit()
            else chr(65 + rng.randrange(26))
            if c.isupper()
            else chr(97 + rng.randrange(26))
            if c.islower()
            else c
            for c in value
        )
        if out != value:
            return out
    return f"REDACTED_{n}"


def synthetic_document(value: str, n: int) -> str:
    """A valid document of the same kind as `value` (CPF, CNPJ, CURP, RFC), else the same shape."""
    rng = Random(n)
    plain = documents.normalize_digits(value)
    makers: tuple[tuple[Callable[[str], bool], Callable[[Random], str]], ...] = (
        (documents.is_valid_cpf, documents.generate_cpf),
        (documents.is_valid_cnpj, documents.generate_cnpj),
        (documents.is_valid_curp, documents.generate_curp),
        (lambda v: len(v) == 13 and documents.is_valid_rfc(v), documents.generate_rfc),
        (
            lambda v: len(v) == 12 and documents.is_valid_rfc(v),
            lambda r: documents.generate_rfc(r, moral=True),
        ),
    )
    for valid, make in makers:
        if valid(plain):
            for _ in range(20):
                made = make(rng)
                if made != plain:
                    return made
    return _same_shape(value, n)


class Redactor:
    """Placeholders for one recording (see the module's text). `name_of`: the fixture name of a
    credential (kept, not secret: `shp_mazul_tienda`), so the scenario can say `as:`."""

    def __init__(
        self, fields: Iterable[str] = (), name_of: Callable[[str], str | None] | None = None
    ) -> None:
        self._fields = frozenset(norm(field) for field in fields)
        self._kinds: dict[tuple[str, bool, bool], str | None] = {}  # (raw key, person, card)
        self._name_of = name_of or (lambda key: None)
        self._by_value: dict[str, str] = {}  # real value -> placeholder; never written
        self._phrases: dict[str, str] = {}  # replaced values with spaces (names, addresses)
        self._count = 0
        self.names: dict[str, str] = {}  # credential placeholder -> fixture name

    # -- placeholders -----------------------------------------------------------------------

    def placeholder(self, value: str, kind: str) -> str:
        """The placeholder of `value` as a `kind` (credential, email, phone, ip, name, address,
        document, card, secret): the same one every time."""
        if not value or _PLACEHOLDER.search(value):
            return value
        found = self._by_value.get(value)
        if found is not None:
            return found
        self._count += 1
        made = self._make(value, kind, self._count)
        self._by_value[value] = made
        if " " in value:
            self._phrases[value] = made
        if kind == "credential":
            name = self._name_of(value)
            if name is not None:
                self.names[made] = name
        return made

    def _make(self, value: str, kind: str, n: int) -> str:
        if kind == "credential":
            match = _CREDENTIAL.fullmatch(value)
            if value.startswith("eyJ"):
                return f"tok_REDACTED_{n}"
            if match and match.group(1):
                return f"{match.group(1)}REDACTED_{n}"
            return f"REDACTED_{n}"
        if kind == "email":
            return f"redacted-{n}@example.com"
        if kind == "phone":
            digits = sum(c.isdigit() for c in value)
            number = ("555" + str(n).zfill(max(digits - 3, 1)))[: max(digits, 4)]
            return ("+" if value.startswith("+") else "") + number
        if kind == "ip":
            return f"2001:db8::{n:x}" if ":" in value else f"198.18.{n // 256 % 256}.{n % 256}"
        if kind == "name":
            return f"Redacted Person {_letters(n)}"
        if kind == "address":
            return f"{n} Example Street"
        if kind == "document":
            return synthetic_document(value, n)
        if kind == "card":
            length = len(re.sub(r"\D", "", value))
            return test_card(length, n) if 13 <= length <= 19 else f"REDACTED_{n}"
        return f"REDACTED_{n}"

    # -- strings by their look --------------------------------------------------------------

    def text(self, text: str, *, cards: bool = True) -> str:
        """A string with every credential, e-mail, card number and already-replaced value in it
        replaced (`cards`: False for a value under an id-like key)."""
        if len(text) < 6:
            return text
        found = self._by_value.get(text)
        if found is not None:
            return found
        if _PLAIN_WORD.fullmatch(text):
            return text
        out = _CREDENTIAL.sub(self._credential, text)
        if "@" in out:
            out = _EMAIL.sub(lambda m: self.placeholder(m.group(0), "email"), out)
        if cards and len(out) >= 13:
            out = _DIGITS.sub(self._card, out)
        if self._by_value:
            out = _TOKEN.sub(self._known, out)
            if " " in out:
                for phrase, made in self._phrases.items():
                    if phrase in out:
                        out = out.replace(phrase, made)
        return out

    def _credential(self, match: re.Match[str]) -> str:
        groups = match.groups()
        for kept, secret in zip(groups[::2], groups[1::2], strict=True):
            if secret is not None:
                if kept and kept.startswith("/"):  # a tokened link: the id stays
                    return kept + self.placeholder(secret, "secret")
                return self.placeholder((kept or "") + secret, "credential")
        return match.group(0)

    def _card(self, match: re.Match[str]) -> str:
        digits = re.sub(r"[ -]", "", match.group(0))
        return self.placeholder(match.group(0), "card") if luhn_ok(digits) else match.group(0)

    def _known(self, match: re.Match[str]) -> str:
        token = match.group(0)
        found = self._by_value.get(token)
        if found is None:
            bare = token.rstrip(".,;:-")
            found = self._by_value.get(bare)
            if found is not None:
                return found + token[len(bare) :]
            return token
        return found

    # -- JSON -------------------------------------------------------------------------------

    def kind_of_key(self, key: str, person: bool = False, card: bool = False) -> str | None:
        """`kind_of` of a key as written (cached: a body repeats the same few keys)."""
        cached = (key, person, card)
        if cached not in self._kinds:
            self._kinds[cached] = self.kind_of(norm(key), person, card)
        return self._kinds[cached]

    def kind_of(self, key: str, person: bool = False, card: bool = False) -> str | None:
        """What the value of a key (normalized) is, for redaction; None: not by its key."""
        if key in self._fields:
            return "secret"
        if key in CREDENTIAL_KEYS:
            return "credential"
        if EMAIL_WORD in key:
            return "email"
        if any(word in key for word in PHONE_WORDS):
            return "phone"
        if key in IP_KEYS:
            return "ip"
        if key in NAME_KEYS or (person and key == "name"):
            return "name"
        if key in ADDRESS_KEYS:
            return "address"
        if key in DOCUMENT_KEYS:
            return "document"
        if key in CARD_KEYS or (card and key == "number"):
            return "card"
        return None

    def learn(
        self, value: Any, kind: str | None = None, person: bool = False, depth: int = 0
    ) -> None:
        """Replace nothing yet: note the placeholders of the values under the keys above (so
        that the other body of the exchange replaces them wherever they show)."""
        if depth > MAX_DEPTH:
            return
        if isinstance(value, dict):
            person = person or any(self.kind_of_key(key) in PERSON_KINDS for key in value)
            for key, item in value.items():
                sub = kind or self.kind_of_key(key, person)
                if isinstance(item, (dict, list)):
                    name = norm(key)
                    self.learn(item, sub, any(w in name for w in PERSON_WORDS), depth + 1)
                elif sub is not None:
                    self._scalar(item, sub)
        elif isinstance(value, list):
            for item in value:
                self.learn(item, kind, person, depth + 1)
        elif kind is not None:
            self._scalar(value, kind)

    def json(self, value: Any) -> Any:
        """A redacted copy of a decoded JSON value. Raises RecursionError past MAX_DEPTH."""
        return self._walk(value, None, False, False, 0)

    def _walk(self, value: Any, kind: str | None, person: bool, card: bool, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise RecursionError("nested past the depth redaction walks")
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            # An object with an e-mail, a phone or a document is a person: its `name` too.
            person = person or any(self.kind_of_key(key) in PERSON_KINDS for key in value)
            for key, item in value.items():
                sub = kind or self.kind_of_key(key, person, card)
                if isinstance(item, (dict, list)):
                    name = norm(key)
                    out[key] = self._walk(
                        item,
                        sub,
                        any(word in name for word in PERSON_WORDS),
                        "card" in name,
                        depth + 1,
                    )
                elif sub is not None:
                    out[key] = self._scalar(item, sub)
                elif isinstance(item, str):
                    out[key] = self.text(item, cards=not ID_LIKE.search(norm(key)))
                else:
                    out[key] = item
            return out
        if isinstance(value, list):
            return [self._walk(item, kind, person, card, depth + 1) for item in value]
        if kind is not None:
            return self._scalar(value, kind)
        return self.text(value) if isinstance(value, str) else value

    def _scalar(self, value: Any, kind: str) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            if kind == "credential" and not _CREDENTIAL.fullmatch(value):
                return self.placeholder(value, "secret")
            return self.placeholder(value, kind)
        if isinstance(value, (int, float)):
            made = self.placeholder(str(value), kind)
            return int(made) if made.isdigit() and isinstance(value, int) else made
        return value

    # -- text bodies, headers, paths, queries -----------------------------------------------

    def body_text(self, text: str) -> str:
        """A body that is not (whole) JSON: the `"key": "value"` and `key=value` pairs of the
        keys above by their key, then every string by its look."""

        def pair(match: re.Match[str]) -> str:
            kind = self.kind_of(norm(match.group(2)))
            if kind is None or not match.group(4):
                return match.group(0)
            value = match.group(4)
            made = (
                self.placeholder(value, "secret")
                if kind == "credential" and not _CREDENTIAL.fullmatch(value)
                else self.placeholder(value, kind)
            )
            return match.group(1) + match.group(2) + match.group(3) + made + match.group(5)

        out = _JSON_PAIR.sub(pair, text)
        out = _FORM_PAIR.sub(pair, out)
        return self.text(out)

    def headers(self, headers: Iterable[tuple[str, str]]) -> dict[str, str]:
        """Lower-case names; one value per name (repeated headers joined with `, `)."""
        out: dict[str, str] = {}
        for name, value in headers:
            lowered = name.lower()
            redacted = self.header(lowered, value)
            out[lowered] = f"{out[lowered]}, {redacted}" if lowered in out else redacted
        return out

    def header(self, name: str, value: str) -> str:
        if "signature" in name:
            return SIGNATURE_REDACTED
        if name in CREDENTIAL_HEADERS:
            scheme, _, credential = value.partition(" ")
            if credential and scheme.lower() in ("bearer", "basic", "token"):
                kind = "credential" if scheme.lower() != "basic" else "secret"
                return f"{scheme} {self.placeholder(credential.strip(), kind)}"
            return self.placeholder(value, "credential")
        if name in COOKIE_HEADERS or norm(name) in self._fields:
            return self.placeholder(value, "secret")
        if any(word in name for word in SECRET_HEADER_WORDS):
            return self.placeholder(value, "credential")
        if name in IP_HEADERS:
            return _IP.sub(
                lambda m: self.placeholder(m.group(0), "ip") if m.group(0).strip(":") else "",
                value,
            )
        return self.text(value)

    def path(self, path: str) -> str:
        return "/".join(self.text(part, cards=False) for part in path.split("/"))

    def query(self, query: str) -> str:
        if not query:
            return query
        pairs = parse_qsl(query, keep_blank_values=True)
        redacted = []
        for key, value in pairs:
            kind = self.kind_of(norm(key))
            redacted.append(
                (key, self._scalar(value, kind) if kind is not None else self.text(value))
            )
        return query if redacted == pairs else urlencode(redacted)


_KEY_WORDS = r"[A-Za-z_\-]{2,40}"
_JSON_PAIR = re.compile(rf'(")({_KEY_WORDS})("\s*:\s*")((?:[^"\\]|\\.)*)(")')
_FORM_PAIR = re.compile(rf"(\b)({_KEY_WORDS})(=)([^&\s]*)()")
