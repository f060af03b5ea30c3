"""Buyer-document and bank-account validators for the countries the simulator serves.

Pure functions only: no I/O and no clock. Every check-digit routine follows the issuing
authority's published algorithm, because the simulator must reject exactly what a real provider
rejects — a lenient check would let integrators ship code that fails against production.
Generators take a `random.Random` so fixtures and tests are reproducible from a seed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import date, timedelta
from random import Random

from simulator.domain.ids import BufferedSystemRandom

# --- shared helpers ------------------------------------------------------------------------

# Humans format document numbers with these; they carry no information.
_SEPARATORS = str.maketrans("", "", ".-/")
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def normalize_digits(s: str) -> str:
    """Drop surrounding whitespace and the `.`, `-`, `/` separators of formatted documents.

    The result is not guaranteed to be digits: validators still check it, so "12a" stays invalid.
    """
    return s.strip().translate(_SEPARATORS)


def _is_ascii_digits(s: str, length: int | tuple[int, int]) -> bool:
    # str.isdigit() also accepts "²" and Arabic-Indic digits; only ASCII 0-9 is a document digit.
    low, high = (length, length) if isinstance(length, int) else length
    return low <= len(s) <= high and s.isascii() and s.isdigit()


def random_digits(rng: Random, n: int) -> str:
    if isinstance(rng, BufferedSystemRandom):
        return rng.characters("0123456789", n)  # from bytes, in C: a CLABE per SPEI payment
    return str(rng.randrange(10**n)).zfill(n)  # one draw, not one per digit


def _mod11_receita(digits: str, weights: Sequence[int]) -> str:
    """Receita Federal's check digit (CPF, CNPJ): remainders 0 and 1 both give 0."""
    remainder = sum(int(d) * w for d, w in zip(digits, weights, strict=True)) % 11
    return "0" if remainder < 2 else str(11 - remainder)


# --- Brazil: CPF / CNPJ --------------------------------------------------------------------


def _cpf_check_digits(first9: str) -> str:
    d1 = _mod11_receita(first9, range(10, 1, -1))
    d2 = _mod11_receita(first9 + d1, range(11, 1, -1))
    return d1 + d2


def is_valid_cpf(s: str) -> bool:
    """Brazilian individual taxpayer number: 11 digits, the last two are mod-11 check digits."""
    digits = normalize_digits(s)
    if not _is_ascii_digits(digits, 11):
        return False
    # "111.111.111-11" and friends satisfy the arithmetic but Receita never issues them.
    if len(set(digits)) == 1:
        return False
    return digits[9:] == _cpf_check_digits(digits[:9])


_CNPJ_W1 = (5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)
_CNPJ_W2 = (6, *_CNPJ_W1)


def _cnpj_check_digits(first12: str) -> str:
    d1 = _mod11_receita(first12, _CNPJ_W1)
    d2 = _mod11_receita(first12 + d1, _CNPJ_W2)
    return d1 + d2


def is_valid_cnpj(s: str) -> bool:
    """Brazilian company number: 14 digits (8 root, 4 branch, 2 mod-11 check digits).

    Only the numeric form is accepted; the alphanumeric CNPJ announced for July 2026 is not.
    """
    digits = normalize_digits(s)
    if not _is_ascii_digits(digits, 14) or len(set(digits)) == 1:
        return False
    return digits[12:] == _cnpj_check_digits(digits[:12])


def generate_cpf(rng: Random) -> str:
    """A valid CPF as 11 bare digits."""
    while True:
        first9 = random_digits(rng, 9)
        if len(set(first9)) > 1:  # all-same bases would produce a rejected number
            return first9 + _cpf_check_digits(first9)


def generate_cnpj(rng: Random) -> str:
    """A valid CNPJ as 14 bare digits, for the head office (branch 0001) as most payers are."""
    while True:
        first12 = random_digits(rng, 8) + "0001"
        cnpj = first12 + _cnpj_check_digits(first12)
        if len(set(cnpj)) > 1:
            return cnpj


# --- Mexico: CURP / RFC ----------------------------------------------------------------------

# RENAPO state codes; NE = born abroad ("nacido en el extranjero"); CDMX keeps the old DF.
# fmt: off
_CURP_STATES = (
    "AS", "BC", "BS", "CC", "CL", "CM", "CS", "CH", "DF", "DG", "GT", "GR", "HG", "JC", "MC",
    "MN", "MS", "NT", "NL", "OC", "PL", "QT", "QR", "SP", "SL", "SR", "TC", "TS", "TL", "VZ",
    "YN", "ZS", "NE",
)
# fmt: on
_CURP_RE = re.compile(
    r"[A-Z][AEIOUX][A-Z]{2}"  # surname/name initials; Ñ and odd cases are written X
    r"(?P<yy>[0-9]{2})(?P<mm>0[1-9]|1[0-2])(?P<dd>0[1-9]|[12][0-9]|3[01])"
    r"[HMX]"  # sex; X (non-binary) has been issued since 2023
    rf"(?:{'|'.join(_CURP_STATES)})"
    r"[B-DF-HJ-NP-TV-Z]{3}"  # first inner consonant of each surname and the name
    r"(?P<diff>[0-9A-Z])"  # homonym differentiator: digit before 2000, letter from 2000
    r"[0-9]"  # check digit
)
# Ñ never appears in a CURP but keeps its slot, shifting O..Z by one.
_CURP_ALPHABET = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ"
_CURP_CONSONANTS = "BCDFGHJKLMNPQRSTVWXYZ"


def _curp_check_digit(first17: str) -> str:
    total = sum(_CURP_ALPHABET.index(c) * (18 - i) for i, c in enumerate(first17))
    return str((10 - total % 10) % 10)


def _is_real_date(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def is_valid_curp(s: str) -> bool:
    """Mexican population registry key: 18 chars, RENAPO format, real birth date, check digit."""
    curp = s.strip().upper()
    match = _CURP_RE.fullmatch(curp)
    if match is None:
        return False
    # The differentiator fixes the century, so 29 February is checked against the right year.
    century = 1900 if match["diff"].isdigit() else 2000
    if not _is_real_date(century + int(match["yy"]), int(match["mm"]), int(match["dd"])):
        return False
    return curp[17] == _curp_check_digit(curp[:17])


_RFC_RE = re.compile(
    r"[A-ZÑ&]{3,4}"  # 3 letters for companies (moral), 4 for individuals (física)
    r"(?P<yy>[0-9]{2})(?P<mm>0[1-9]|1[0-2])(?P<dd>0[1-9]|[12][0-9]|3[01])"
    r"[A-Z0-9]{2}[0-9A]"  # homoclave: two SAT-assigned chars, then the check digit
)
_RFC_ALPHABET = "0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ Ñ"
# SAT's generic RFCs (domestic and foreign "público en general") are accepted as issued.
_RFC_GENERIC = frozenset({"XAXX010101000", "XEXX010101000"})


def _rfc_check_digit(first: str) -> str:
    """SAT mod-11 check digit; a company's 11 chars are left-padded with a space to 12."""
    padded = first.rjust(12)
    total = sum(_RFC_ALPHABET.index(c) * (13 - i) for i, c in enumerate(padded))
    value = (11 - total % 11) % 11
    return "A" if value == 10 else str(value)


def is_valid_rfc(s: str, *, check_digit: bool = True) -> bool:
    """Mexican tax id: 12 chars (company) or 13 (individual), real date, SAT check digit.

    `check_digit=False` keeps only the format and date checks, for callers that must accept the
    rare legacy RFCs SAT issued with a non-conforming last character.
    """
    rfc = unicodedata.normalize("NFC", s.strip().upper())
    if rfc in _RFC_GENERIC:
        return True
    match = _RFC_RE.fullmatch(rfc)
    if match is None:
        return False
    # The century is not encoded. 29 February exists in 20yy exactly when yy % 4 == 0, which is
    # also when it can exist in either century ("000229" is 29 Feb 2000), so 20yy decides.
    if not _is_real_date(2000 + int(match["yy"]), int(match["mm"]), int(match["dd"])):
        return False
    return not check_digit or rfc[-1] == _rfc_check_digit(rfc[:-1])


def _random_date(rng: Random, first: date, last: date) -> date:
    return first + timedelta(days=rng.randrange((last - first).days + 1))


def generate_curp(rng: Random) -> str:
    """A valid CURP for someone born 1940-2010 (the differentiator tracks the century)."""
    born = _random_date(rng, date(1940, 1, 1), date(2010, 12, 31))
    first17 = (
        rng.choice(_UPPER)
        + rng.choice("AEIOU")
        + rng.choice(_UPPER)
        + rng.choice(_UPPER)
        + born.strftime("%y%m%d")
        + rng.choice("HM")
        + rng.choice(_CURP_STATES)
        + "".join(rng.choice(_CURP_CONSONANTS) for _ in range(3))
        + (str(rng.randrange(10)) if born.year < 2000 else rng.choice(_UPPER))
    )
    return first17 + _curp_check_digit(first17)


def generate_rfc(rng: Random, *, moral: bool = False) -> str:
    """A valid RFC: 13 chars for an individual, or 12 for a company when `moral` is set."""
    born = _random_date(rng, date(1940, 1, 1), date(2010, 12, 31))
    letters = "".join(rng.choice(_UPPER) for _ in range(3 if moral else 4))
    homoclave = "".join(rng.choice(_UPPER + "0123456789") for _ in range(2))
    first = letters + born.strftime("%y%m%d") + homoclave
    return first + _rfc_check_digit(first)


# --- Mexico: CLABE ---------------------------------------------------------------------------


def clabe_check_digit(first17: str) -> str:
    """Banxico's CLABE check digit: weights 3,7,1 repeating, each product taken mod 10."""
    if not _is_ascii_digits(first17, 17):
        raise ValueError("a CLABE check digit needs exactly 17 digits")
    return clabe_check_digit_of_digits(first17)


def clabe_check_digit_of_digits(first17: str) -> str:
    """`clabe_check_digit` of 17 characters known to be ASCII digits (drawn, not received).

    Only the sum's last digit counts, so each product need not be taken mod 10 and the digits of
    each weight can be summed first: three sums over the ASCII codes (in C), less the codes of
    '0', where reading each digit with int() cost sixteen times as much (a CLABE per SPEI
    payment)."""
    codes = first17.encode("ascii")
    total = 3 * sum(codes[0::3]) + 7 * sum(codes[1::3]) + sum(codes[2::3]) - _ZERO_CODES
    return _DIGIT_TEXTS[-total % 10]


# What the 17 codes of '0' add to the weighted sum: 48 x (3 x 6 + 7 x 6 + 1 x 5).
_ZERO_CODES = 48 * (3 * 6 + 7 * 6 + 5)
_DIGIT_TEXTS = "0123456789"


def is_valid_clabe(s: str) -> bool:
    """Mexican interbank account: 18 digits (bank 3, plaza 3, account 11, check 1)."""
    digits = normalize_digits(s)
    return _is_ascii_digits(digits, 18) and digits[17] == clabe_check_digit(digits[:17])


def clabe_problem(value: str) -> str:
    """What is wrong with a CLABE sent as 18 plain digits, in words; "" when nothing is. A wrong
    check digit is named, with the one the first 17 digits call for."""
    if not _is_ascii_digits(value, 18):
        return f"a CLABE has exactly 18 digits (0-9); got {len(value)} characters"
    expected = clabe_check_digit(value[:17])
    if value[17] != expected:
        return f"the check digit (the 18th) is {value[17]}; for these 17 digits it is {expected}"
    return ""


# --- Argentina: CBU --------------------------------------------------------------------------


def _cbu_check_digit(digits: str, weights: Sequence[int]) -> str:
    total = sum(int(d) * w for d, w in zip(digits, weights, strict=True))
    return str((10 - total % 10) % 10)


_CBU_W1 = (7, 1, 3, 9, 7, 1, 3)
_CBU_W2 = (3, 9, 7, 1, 3, 9, 7, 1, 3, 9, 7, 1, 3)


def is_valid_cbu(s: str) -> bool:
    """Argentine bank account: 22 digits in two blocks, each ending in its own check digit.

    Block 1 = bank (3) + branch (4) + check; block 2 = account (13) + check.
    """
    digits = normalize_digits(s)
    if not _is_ascii_digits(digits, 22):
        return False
    return digits[7] == _cbu_check_digit(digits[:7], _CBU_W1) and digits[21] == _cbu_check_digit(
        digits[8:21], _CBU_W2
    )


def generate_cbu(rng: Random) -> str:
    """A valid CBU as 22 bare digits."""
    bank_branch = random_digits(rng, 7)
    account = random_digits(rng, 13)
    return (
        bank_branch
        + _cbu_check_digit(bank_branch, _CBU_W1)
        + account
        + _cbu_check_digit(account, _CBU_W2)
    )


# --- Argentina: CUIT / CUIL ------------------------------------------------------------------

# Persons (CUIL, or CUIT for the self-employed): 20, 23, 24, 27; companies: 30, 33, 34.
_CUIT_PREFIXES = frozenset({"20", "23", "24", "27", "30", "33", "34"})
_CUIT_WEIGHTS = (5, 4, 3, 2, 7, 6, 5, 4, 3, 2)


def is_valid_cuit(s: str) -> bool:
    """Argentine tax id (CUIT) or labour id (CUIL): prefix (2) + DNI or company number (8) +
    check digit, written bare or as 20-12345678-6. The check digit is 11 minus the weighted sum
    mod 11 (11 -> 0); a sum that would need 10 is never issued (AFIP moves it to prefix 23/33)."""
    digits = normalize_digits(s)
    if not _is_ascii_digits(digits, 11) or digits[:2] not in _CUIT_PREFIXES:
        return False
    check = 11 - sum(int(d) * w for d, w in zip(digits, _CUIT_WEIGHTS, strict=False)) % 11
    return check != 10 and digits[10] == str(check % 11)


# --- Chile: RUT ------------------------------------------------------------------------------


def _rut_check_digit(body: str) -> str:
    # Weights 2..7 repeating from the rightmost digit; 11 maps to 0 and 10 to K.
    total = sum(int(d) * (2 + i % 6) for i, d in enumerate(reversed(body)))
    value = 11 - total % 11
    return {11: "0", 10: "K"}.get(value, str(value))


def is_valid_rut(s: str) -> bool:
    """Chilean tax/identity number: 7-8 digit body plus a mod-11 check character (0-9 or K)."""
    rut = normalize_digits(s).upper()
    body, check = rut[:-1], rut[-1:]
    return _is_ascii_digits(body, (7, 8)) and check == _rut_check_digit(body)


# --- email -----------------------------------------------------------------------------------


def is_valid_email(s: str) -> bool:
    """Pragmatic address check: what a checkout form accepts, not the full RFC 5322 grammar."""
    # U+0020 is the one character both whitespace and printable, so this refuses any whitespace
    # or unprintable character without a per-character loop.
    if len(s) > 254 or s.count("@") != 1 or " " in s or not s.isprintable():
        return False
    local, _, domain = s.partition("@")
    labels = domain.split(".")
    # RFC 5321 caps the local part at 64; every domain label must be non-empty ("a@b." is not).
    return 0 < len(local) <= 64 and len(labels) >= 2 and "" not in labels


# --- per-country dispatch --------------------------------------------------------------------

_DOCUMENT_KINDS: dict[str, str] = {
    "MEX": "RFC/CURP",
    "BRA": "CPF",
    "COL": "CC",
    "ARG": "DNI",
    "CHL": "RUT",
    "PER": "DNI",
    "USA": "SSN",
}
# Countries whose national id has no check digit: only its length is knowable.
_DIGIT_LENGTHS: dict[str, tuple[int, int]] = {
    "COL": (6, 10),
    "ARG": (7, 8),
    "PER": (8, 8),
    "USA": (9, 9),
}
_GENERIC_DOCUMENT_RE = re.compile(r"[A-Za-z0-9]{4,40}")


def document_kind_for_country(iso3: str) -> str:
    """The name of the buyer document a country's providers ask for; "ID" when unknown."""
    return _DOCUMENT_KINDS.get(iso3.upper(), "ID")


def is_valid_document(iso3: str, value: str) -> bool:
    """Whether `value` is an acceptable buyer document for the country `iso3` (ISO 3166 alpha-3)."""
    country = iso3.upper()
    if country == "MEX":
        return is_valid_rfc(value) or is_valid_curp(value)
    if country == "BRA":
        return is_valid_cpf(value) or is_valid_cnpj(value)
    if country == "CHL":
        return is_valid_rut(value)
    if country == "ARG" and is_valid_cuit(value):
        return True  # or a DNI (digits only, below), as local integrators send either
    normalized = normalize_digits(value)
    if country in _DIGIT_LENGTHS:
        return _is_ascii_digits(normalized, _DIGIT_LENGTHS[country])
    return _GENERIC_DOCUMENT_RE.fullmatch(normalized) is not None
