"""Payment instructions a provider hands back for a direct rail: CLABE, PIX, OXXO, boleto, vouchers.

Pure functions only: no I/O and no clock (due dates are passed in). Randomness comes from the
caller's `random.Random`, so a seeded simulator returns the same instructions on every run. Each
value is well-formed for its real network — correct lengths, check digits and CRC — so an
integrator's own validation behaves against the simulator exactly as it will in production.
"""

from __future__ import annotations

import binascii
import re
import unicodedata
from datetime import date
from decimal import Decimal
from random import Random

from simulator.domain.documents import (
    clabe_check_digit,
    clabe_check_digit_of_digits,
    random_digits,
)
from simulator.domain.ids import BufferedSystemRandom

_DIGITS_RE = re.compile(r"[0-9]+")


def _luhn_check_digit(payload: str) -> str:
    """Mod-10 Luhn digit: from the right, double every other digit starting with the last one.

    The same arithmetic is FEBRABAN's "módulo 10" (weights 2,1,2,1... from the right, digits of
    each product summed), so boleto fields and cash references share it.
    """
    total = 0
    for i, ch in enumerate(reversed(payload)):
        product = int(ch) * (2 if i % 2 == 0 else 1)
        total += product - 9 if product > 9 else product
    return str((10 - total % 10) % 10)


def _is_luhn_number(s: str, lengths: range) -> bool:
    return (
        len(s) in lengths
        and _DIGITS_RE.fullmatch(s) is not None
        and s[-1] == _luhn_check_digit(s[:-1])
    )


def _cents(amount: Decimal) -> int:
    """Whole cents of a positive amount; refuses sub-cent precision instead of rounding money."""
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"amount must be a positive finite number, got {amount}")
    cents = amount * 100
    if cents != cents.to_integral_value():
        raise ValueError(f"amount {amount} has more than two decimals")
    return int(cents)


# --- SPEI (Mexico) ---------------------------------------------------------------------------


def generate_clabe(rng: Random, bank_code: str = "646", plaza: str = "180") -> str:
    """An 18-digit CLABE with a valid check digit; bank 646 is STP, where most PSPs bank."""
    if bank_code != "646" or plaza != "180":  # the defaults (every SPEI payment's) are good
        if _DIGITS_RE.fullmatch(bank_code) is None or len(bank_code) != 3:
            raise ValueError(f"bank_code must be 3 digits, got {bank_code!r}")
        if _DIGITS_RE.fullmatch(plaza) is None or len(plaza) != 3:
            raise ValueError(f"plaza must be 3 digits, got {plaza!r}")
    first17 = bank_code + plaza + random_digits(rng, 11)
    return first17 + clabe_check_digit(first17)


def spei_reference(rng: Random) -> str:
    """A SPEI numeric reference: a 7-digit integer field, so no leading zero for banks to drop."""
    if isinstance(rng, BufferedSystemRandom):
        return rng.characters("123456789", 1) + random_digits(rng, 6)
    return str(rng.randrange(1_000_000, 10_000_000))


_DIGITS = "0123456789"
_STP_BANK_AND_PLAZA = "646180"


def spei_account(rng: Random) -> tuple[str, str]:
    """A SPEI payment's CLABE (`generate_clabe`'s defaults) and reference (`spei_reference`).

    From OS randomness (every `serve`), their 18 random digits are one draw: a SPEI charge is
    the commonest payment, and three draws were a third of the cost of its instructions. A
    seeded generator makes the two functions' own draws, in their order, so a seeded server
    still answers what it answered before."""
    if not isinstance(rng, BufferedSystemRandom):
        return generate_clabe(rng), spei_reference(rng)
    digits = rng.characters(_DIGITS, 18)
    first17 = _STP_BANK_AND_PLAZA + digits[:11]
    reference = digits[11:]
    if reference[0] == "0":
        # No leading zero (see spei_reference): the first digit, redrawn from 1-9 when it is 0,
        # is still uniform over 1-9 and independent of the others.
        reference = rng.characters("123456789", 1) + reference[1:]
    return first17 + clabe_check_digit_of_digits(first17), reference


# --- PIX BR Code (Brazil) --------------------------------------------------------------------

_PIX_GUI = "br.gov.bcb.pix"
_PIX_TXID_RE = re.compile(r"[A-Za-z0-9]{1,25}|\*\*\*")  # "***" = no txid, allowed by BACEN


def crc16_ccitt(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection), as EMV QR codes use.

    The standard library's `binascii.crc_hqx` is this CRC (CRC-CCITT, XModem's polynomial) in C;
    with 0xFFFF as its start value it gives CCITT-FALSE. The bit-by-bit loop it replaced was a
    third of a PIX payment's CPU (issue 32)."""
    return binascii.crc_hqx(data, 0xFFFF)


def _tlv(tag: str, value: str) -> str:
    if len(value) > 99:
        raise ValueError(f"EMV field {tag} is {len(value)} chars; the format caps it at 99")
    return f"{tag}{len(value):02d}{value}"


def _emv_text(text: str, limit: int) -> str:
    """Fold to upper-case printable ASCII: BR Code readers are not required to handle more."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = " ".join("".join(c for c in folded if c.isprintable()).upper().split())
    return cleaned[:limit].rstrip()


def pix_brcode(
    *, key: str, amount: Decimal, merchant_name: str, merchant_city: str, txid: str
) -> str:
    """A PIX "copia e cola" payload (EMV MPM per BACEN's BR Code manual) with its CRC.

    Raises ValueError rather than silently altering the key, amount or txid: those are what the
    payment is reconciled on. Name and city are display text, so they are folded and truncated.
    """
    if not key or len(key) > 77 or not key.isascii() or not key.isprintable():
        raise ValueError("PIX key must be 1-77 printable ASCII chars")
    if _PIX_TXID_RE.fullmatch(txid) is None:
        raise ValueError(f"PIX txid must be 1-25 ASCII alphanumerics (or '***'), got {txid!r}")
    name = _emv_text(merchant_name, 25)
    city = _emv_text(merchant_city, 15)
    if not name or not city:
        raise ValueError("merchant name and city must keep at least one ASCII character")
    _cents(amount)  # validates: positive, finite, at most two decimals
    amount_text = f"{amount:.2f}"
    if len(amount_text) > 13:
        raise ValueError(f"amount {amount} does not fit the 13-char EMV amount field")
    payload = (
        _tlv("00", "01")
        + _tlv("26", _tlv("00", _PIX_GUI) + _tlv("01", key))
        + _tlv("52", "0000")
        + _tlv("53", "986")
        + _tlv("54", amount_text)
        + _tlv("58", "BR")
        + _tlv("59", name)
        + _tlv("60", city)
        + _tlv("62", _tlv("05", txid))
        + "6304"  # the CRC field's own tag and length are part of the checksummed data
    )
    return payload + f"{crc16_ccitt(payload.encode('ascii')):04X}"


def parse_emv(payload: str) -> dict[str, str]:
    """Split an EMV MPM payload (or a template's value) into its top-level tag -> value map.

    Raises ValueError on truncated fields, non-numeric tags or lengths, and repeated tags.
    """
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(payload):
        header = payload[pos : pos + 4]
        if len(header) < 4 or _DIGITS_RE.fullmatch(header) is None:
            raise ValueError(f"malformed EMV field header at offset {pos}")
        tag, length = header[:2], int(header[2:])
        value = payload[pos + 4 : pos + 4 + length]
        if len(value) != length:
            raise ValueError(f"EMV field {tag} is truncated")
        if tag in fields:
            raise ValueError(f"EMV field {tag} appears twice")
        fields[tag] = value
        pos += 4 + length
    return fields


def is_valid_brcode(payload: str) -> bool:
    """Whether `payload` is a structurally valid PIX BR Code whose CRC matches.

    Checks the TLV structure, the fields BACEN makes mandatory (format indicator first, Pix
    merchant account with a key or a dynamic URL, MCC, BRL currency, country BR, name, city,
    additional data with a txid) and the trailing CRC. Hex case is not significant.
    """
    try:
        fields = parse_emv(payload)
        account = parse_emv(fields.get("26", ""))
        extra = parse_emv(fields.get("62", ""))
    except ValueError:
        return False
    tags = list(fields)
    if tags[:1] != ["00"] or fields["00"] != "01" or tags[-1] != "63" or len(fields["63"]) != 4:
        return False
    if account.get("00", "").lower() != _PIX_GUI or not (account.get("01") or account.get("25")):
        return False
    if fields.get("53") != "986" or fields.get("58") != "BR" or "05" not in extra:
        return False
    if not all(fields.get(tag) for tag in ("52", "59", "60")):
        return False
    try:
        data = payload[:-4].encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates cannot have come from a real QR code
        return False
    return fields["63"].upper() == f"{crc16_ccitt(data):04X}"


# --- cash references -------------------------------------------------------------------------


def oxxo_barcode(rng: Random) -> str:
    """A 14-digit OXXO payment reference: 13 random digits and a Luhn check digit."""
    body = random_digits(rng, 13)
    return body + _luhn_check_digit(body)


def is_valid_oxxo_reference(s: str) -> bool:
    """14 ASCII digits whose last one is the Luhn check digit of the first 13."""
    return _is_luhn_number(s, range(14, 15))


def voucher_code(rng: Random) -> str:
    """A generic cash-voucher code (PagoEfectivo / Pago Fácil style): 12-16 digits, Luhn-checked."""
    body = random_digits(rng, rng.randint(11, 15))
    return body + _luhn_check_digit(body)


def is_valid_voucher_code(s: str) -> bool:
    """12-16 ASCII digits whose last one is the Luhn check digit of the rest."""
    return _is_luhn_number(s, range(12, 17))


# --- boleto (Brazil) -------------------------------------------------------------------------

# Real compensation codes (Banco do Brasil, Santander, Caixa, Bradesco, Itaú) so the line's
# bank prefix looks familiar; the 25-digit "campo livre" layout of each bank is not modelled.
_BOLETO_BANKS = ("001", "033", "104", "237", "341")
_FACTOR_BASE = date(1997, 10, 7)  # FEBRABAN's day 0 for the due-date factor
_LINE_SEPARATORS = str.maketrans("", "", ". \t")


def _due_factor(due_date: date) -> str:
    """FEBRABAN due-date factor: days since 1997-10-07, cycling through 1000-9999.

    Factor 9999 was 2025-02-21; the next day restarted at 1000, so the factor wraps every 9000
    days instead of growing a fifth digit.
    """
    days = (due_date - _FACTOR_BASE).days
    if days < 1000:
        raise ValueError("a boleto cannot fall due before 2000-07-03 (factor 1000)")
    return f"{(days - 1000) % 9000 + 1000:04d}"


def _boleto_general_check_digit(barcode43: str) -> str:
    """Mod-11 DAC over the barcode minus its 5th position; weights 2..9 from the right.

    Results 0, 10 and 11 all become 1, so the digit is never 0.
    """
    total = sum(int(d) * (2 + i % 8) for i, d in enumerate(reversed(barcode43)))
    value = 11 - total % 11
    return "1" if value in (0, 10, 11) else str(value)


def boleto_line(rng: Random, amount: Decimal, due_date: date) -> str:
    """A bank boleto's "linha digitável" as 47 bare digits.

    Layout (FEBRABAN): field 1 = bank + currency 9 + free[0:5] + DV, field 2 = free[5:15] + DV,
    field 3 = free[15:25] + DV, field 4 = general DV of the barcode, field 5 = due-date factor
    (4) + amount in cents (10). Field DVs are mod 10, the general DV is mod 11.
    """
    cents = _cents(amount)
    if cents > 9_999_999_999:
        raise ValueError(f"amount {amount} does not fit the boleto's 10-digit amount field")
    bank_currency = rng.choice(_BOLETO_BANKS) + "9"
    factor_amount = _due_factor(due_date) + f"{cents:010d}"
    free = random_digits(rng, 25)
    general = _boleto_general_check_digit(bank_currency + factor_amount + free)
    fields = (bank_currency + free[:5], free[5:15], free[15:25])
    return "".join(f + _luhn_check_digit(f) for f in fields) + general + factor_amount


def is_valid_boleto_line(s: str) -> bool:
    """Whether `s` is a bank boleto line (47 digits; dots and spaces ignored) with valid DVs.

    Utility/tax collection slips ("arrecadação", 48 digits starting with 8) are a different
    format and are rejected.
    """
    line = s.strip().translate(_LINE_SEPARATORS)
    if len(line) != 47 or _DIGITS_RE.fullmatch(line) is None:
        return False
    fields = (line[0:10], line[10:21], line[21:32])
    if any(f[-1] != _luhn_check_digit(f[:-1]) for f in fields):
        return False
    free = line[4:9] + line[10:20] + line[21:31]
    return line[32] == _boleto_general_check_digit(line[0:4] + line[33:47] + free)
