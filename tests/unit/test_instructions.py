"""Payment-instruction generators: published vectors, round-trips and mutation checks."""

from __future__ import annotations

import random
from collections import Counter
from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.domain.documents import is_valid_clabe
from simulator.domain.ids import BufferedSystemRandom
from simulator.domain.instructions import (
    boleto_line,
    crc16_ccitt,
    generate_clabe,
    is_valid_boleto_line,
    is_valid_brcode,
    is_valid_oxxo_reference,
    is_valid_voucher_code,
    oxxo_barcode,
    parse_emv,
    pix_brcode,
    spei_account,
    spei_reference,
    voucher_code,
)

FAST = settings(max_examples=100, deadline=None, derandomize=True)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
DIGITS = "0123456789"

# Static BR Code from BACEN's BR Code manual (Pix key is a random EVP, no amount, txid "***").
BACEN_SAMPLE = (
    "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR"
    "5913Fulano de Tal6008BRASILIA62070503***63041D3D"
)
# A Santander boleto line ("033991614.0 0700000191.2 8155600101.4 4 11370000038936").
SANTANDER_LINE = "03399161400700000191281556001014411370000038936"


def substitutions(value: str, position: int) -> list[str]:
    return [value[:position] + c + value[position + 1 :] for c in DIGITS if c != value[position]]


# --- SPEI ------------------------------------------------------------------------------------


@FAST
@given(seeds)
def test_generated_clabe_is_valid_and_keeps_bank_and_plaza(seed: int) -> None:
    clabe = generate_clabe(random.Random(seed))
    assert len(clabe) == 18 and clabe.startswith("646180") and is_valid_clabe(clabe)
    other = generate_clabe(random.Random(seed), bank_code="012", plaza="320")
    assert other.startswith("012320") and is_valid_clabe(other)


@pytest.mark.parametrize(("bank", "plaza"), [("64", "180"), ("646", "18a"), ("6460", "180")])
def test_generate_clabe_refuses_malformed_prefixes(bank: str, plaza: str) -> None:
    with pytest.raises(ValueError):
        generate_clabe(random.Random(0), bank_code=bank, plaza=plaza)


def test_generators_are_deterministic_for_a_seed() -> None:
    def batch(seed: int) -> tuple[str, ...]:
        rng = random.Random(seed)
        return (
            generate_clabe(rng),
            spei_reference(rng),
            oxxo_barcode(rng),
            voucher_code(rng),
            boleto_line(rng, Decimal("10.00"), date(2030, 1, 1)),
        )

    assert batch(7) == batch(7)
    assert batch(7) != batch(8)


@FAST
@given(seeds)
def test_spei_reference_is_seven_digits(seed: int) -> None:
    ref = spei_reference(random.Random(seed))
    assert len(ref) == 7 and ref.isascii() and ref.isdigit() and ref[0] != "0"


def test_spei_account_from_a_seed_is_the_two_generators_in_their_order() -> None:
    rng = random.Random(11)
    expected = (generate_clabe(rng), spei_reference(rng))
    assert spei_account(random.Random(11)) == expected


def test_spei_account_from_os_randomness_is_valid_and_uniform() -> None:
    # One draw gives both: the CLABE's 11 account digits and the reference's 7, whose first
    # digit (0 redrawn from 1-9) must stay uniform over 1-9, as `spei_reference`'s is.
    rng = BufferedSystemRandom()
    firsts: Counter[str] = Counter()
    for _ in range(9000):
        clabe, reference = spei_account(rng)
        assert clabe.startswith("646180") and is_valid_clabe(clabe)
        assert len(reference) == 7 and reference.isascii() and reference.isdigit()
        firsts[reference[0]] += 1
    assert set(firsts) == set("123456789")
    assert all(abs(count - 1000) < 150 for count in firsts.values())


# --- PIX -------------------------------------------------------------------------------------


def test_crc16_ccitt_false_check_value() -> None:
    # The catalogue check value of CRC-16/CCITT-FALSE.
    assert crc16_ccitt(b"123456789") == 0x29B1
    assert crc16_ccitt(b"") == 0xFFFF


def test_bacen_sample_is_valid_and_parses() -> None:
    assert is_valid_brcode(BACEN_SAMPLE)
    fields = parse_emv(BACEN_SAMPLE)
    assert list(fields) == ["00", "26", "52", "53", "58", "59", "60", "62", "63"]
    assert fields["59"] == "Fulano de Tal" and fields["63"] == "1D3D"
    assert parse_emv(fields["26"]) == {
        "00": "br.gov.bcb.pix",
        "01": "123e4567-e12b-12d1-a456-426655440000",
    }
    assert parse_emv(fields["62"]) == {"05": "***"}


def test_brcode_crc_hex_case_is_not_significant() -> None:
    assert is_valid_brcode(BACEN_SAMPLE[:-4] + "1d3d")


@pytest.mark.parametrize(
    "payload",
    [
        BACEN_SAMPLE[:-4] + "1D3E",  # wrong CRC
        BACEN_SAMPLE.replace("Fulano", "Fulana"),  # tampered text, stale CRC
        BACEN_SAMPLE[:-8],  # no CRC field
        BACEN_SAMPLE[:-1],  # truncated CRC
        BACEN_SAMPLE + "0",
        BACEN_SAMPLE.replace("br.gov.bcb.pix", "br.gov.bcb.pax"),
        "",
        "not a qr code",
    ],
)
def test_brcode_rejections(payload: str) -> None:
    assert not is_valid_brcode(payload)


def _with_crc(body: str) -> str:
    body += "6304"
    return body + f"{crc16_ccitt(body.encode()):04X}"


def test_brcode_requires_pix_mandatory_fields_even_with_a_good_crc() -> None:
    fields = parse_emv(BACEN_SAMPLE)
    rebuilt = "".join(f"{t}{len(v):02d}{v}" for t, v in fields.items() if t != "63")
    assert is_valid_brcode(_with_crc(rebuilt))
    assert not is_valid_brcode(_with_crc(rebuilt.replace("5303986", "5303840")))  # USD
    assert not is_valid_brcode(_with_crc(rebuilt.replace("62070503***", "")))  # no txid
    assert not is_valid_brcode(_with_crc(rebuilt[6:]))  # format indicator missing
    assert not is_valid_brcode(_with_crc(rebuilt.replace("bcb.pix", "bcb.pax")))  # not Pix


@pytest.mark.parametrize(
    "payload", ["0002", "000201X", "0A0201", "00020100020101", "0099" + "x" * 10]
)
def test_parse_emv_rejects_malformed_tlv(payload: str) -> None:
    with pytest.raises(ValueError):
        parse_emv(payload)


_KEYS = st.sampled_from(
    [
        "123e4567-e12b-12d1-a456-426655440000",
        "fulano@example.com",
        "+5561912345678",
        "52998224725",
        "k" * 77,
    ]
)
_AMOUNTS = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("9999999999.99"), places=2)
_TXIDS = st.from_regex(r"[A-Za-z0-9]{1,25}|\*\*\*", fullmatch=True)


@FAST
@given(_KEYS, _AMOUNTS, st.text(min_size=1, max_size=40), _TXIDS)
def test_generated_brcode_is_valid_and_round_trips(
    key: str, amount: Decimal, name: str, txid: str
) -> None:
    payload = pix_brcode(
        key=key,
        amount=amount,
        merchant_name="Loja " + name,
        merchant_city="São Paulo",
        txid=txid,
    )
    assert is_valid_brcode(payload) and payload.isascii()
    fields = parse_emv(payload)
    assert parse_emv(fields["26"])["01"] == key
    assert Decimal(fields["54"]) == amount and len(fields["54"].split(".")[1]) == 2
    assert fields["59"].startswith("LOJA") and len(fields["59"]) <= 25
    assert fields["59"] == fields["59"].upper()
    assert fields["60"] == "SAO PAULO"
    assert parse_emv(fields["62"]) == {"05": txid}
    # Any single-character change in the payload breaks the CRC or the structure.
    i = len(payload) // 2
    flipped = payload[:i] + ("A" if payload[i] != "A" else "B") + payload[i + 1 :]
    assert not is_valid_brcode(flipped)


def test_brcode_folds_and_truncates_display_text() -> None:
    payload = pix_brcode(
        key="fulano@example.com",
        amount=Decimal("1234.5"),
        merchant_name="Padaria  Pão de Açúcar e Confeitaria Ltda",
        merchant_city="Florianópolis do Sul",
        txid="PED000123",
    )
    fields = parse_emv(payload)
    assert fields["54"] == "1234.50"
    assert fields["59"] == "PADARIA PAO DE ACUCAR E C"
    assert fields["60"] == "FLORIANOPOLIS D"


@pytest.mark.parametrize(
    "overrides",
    [
        {"txid": "pay_123"},  # underscore is not alphanumeric
        {"txid": "A" * 26},
        {"txid": ""},
        {"amount": Decimal("0")},
        {"amount": Decimal("-1.00")},
        {"amount": Decimal("1.005")},
        {"amount": Decimal("NaN")},
        {"amount": Decimal("10000000000.00")},  # 14 chars
        {"key": ""},
        {"key": "k" * 78},
        {"merchant_name": "北京"},  # nothing left after ASCII folding
    ],
)
def test_pix_brcode_refuses_values_it_would_have_to_alter(overrides: dict[str, object]) -> None:
    kwargs: dict[str, object] = {
        "key": "fulano@example.com",
        "amount": Decimal("10.00"),
        "merchant_name": "Fulano",
        "merchant_city": "Brasilia",
        "txid": "ABC123",
        **overrides,
    }
    with pytest.raises(ValueError):
        pix_brcode(**kwargs)  # type: ignore[arg-type]  # wrong types on purpose: refused


# --- OXXO and vouchers -----------------------------------------------------------------------


def test_luhn_known_vectors() -> None:
    # Published Luhn-valid test card numbers of the right lengths (Diners 14, Visa 16).
    assert is_valid_oxxo_reference("30569309025904")
    assert not is_valid_oxxo_reference("30569309025905")
    assert is_valid_voucher_code("4111111111111111")
    assert not is_valid_voucher_code("4111111111111112")


@FAST
@given(seeds)
def test_oxxo_reference_validates_and_catches_every_single_digit_change(seed: int) -> None:
    ref = oxxo_barcode(random.Random(seed))
    assert len(ref) == 14 and is_valid_oxxo_reference(ref)
    for position in range(14):
        assert not any(is_valid_oxxo_reference(m) for m in substitutions(ref, position))


@pytest.mark.parametrize("ref", ["", "1234567890123", "123456789012345", "1234567890123a"])
def test_oxxo_reference_rejects_wrong_shapes(ref: str) -> None:
    assert not is_valid_oxxo_reference(ref)


@FAST
@given(seeds)
def test_voucher_code_validates_and_catches_every_single_digit_change(seed: int) -> None:
    code = voucher_code(random.Random(seed))
    assert 12 <= len(code) <= 16 and is_valid_voucher_code(code)
    for position in range(len(code)):
        assert not any(is_valid_voucher_code(m) for m in substitutions(code, position))


def test_voucher_code_uses_the_whole_length_range() -> None:
    rng = random.Random(3)
    assert {len(voucher_code(rng)) for _ in range(200)} == set(range(12, 17))


# --- boleto ----------------------------------------------------------------------------------


def test_real_boleto_line_is_valid_with_or_without_formatting() -> None:
    assert is_valid_boleto_line(SANTANDER_LINE)
    assert is_valid_boleto_line("03399.16140 07000.001912 81556.001014 4 11370000038936")


@pytest.mark.parametrize(
    "line",
    [
        SANTANDER_LINE[:9] + "1" + SANTANDER_LINE[10:],  # field 1 DV
        SANTANDER_LINE[:32] + "5" + SANTANDER_LINE[33:],  # general DV
        SANTANDER_LINE[:-1],
        SANTANDER_LINE + "0",
        "8" * 48,  # utility-bill layout is not a bank boleto
        "",
    ],
)
def test_boleto_line_rejections(line: str) -> None:
    assert not is_valid_boleto_line(line)


@pytest.mark.parametrize(
    ("due", "factor"),
    [
        (date(2000, 7, 3), "1000"),
        (date(2025, 2, 21), "9999"),
        (date(2025, 2, 22), "1000"),  # FEBRABAN's 2025 factor rollover
        (date(2025, 2, 23), "1001"),
    ],
)
def test_boleto_encodes_due_factor_and_amount(due: date, factor: str) -> None:
    line = boleto_line(random.Random(0), Decimal("1234.56"), due)
    assert line[33:37] == factor
    assert line[37:] == "0000123456"
    assert is_valid_boleto_line(line)


@pytest.mark.parametrize(
    ("amount", "due"),
    [
        (Decimal("0"), date(2030, 1, 1)),
        (Decimal("1.001"), date(2030, 1, 1)),
        (Decimal("100000000.00"), date(2030, 1, 1)),  # 11 digits of cents
        (Decimal("1.00"), date(2000, 7, 2)),  # before factor 1000
    ],
)
def test_boleto_line_refuses_unencodable_input(amount: Decimal, due: date) -> None:
    with pytest.raises(ValueError):
        boleto_line(random.Random(0), amount, due)


@FAST
@given(
    seeds,
    st.decimals(min_value=Decimal("0.01"), max_value=Decimal("99999999.99"), places=2),
    st.integers(min_value=0, max_value=20_000),
)
def test_generated_boleto_line_validates_and_mutations_break_it(
    seed: int, amount: Decimal, offset: int
) -> None:
    line = boleto_line(random.Random(seed), amount, date(2000, 7, 3) + timedelta(days=offset))
    assert len(line) == 47 and line.isdigit() and is_valid_boleto_line(line)
    assert int(line[37:]) == int(amount * 100)
    # Fields 1-3 carry a Luhn-style DV, and the general DV is a deterministic function of the
    # rest: substituting any of those digits is always caught.
    for position in range(33):
        assert not any(is_valid_boleto_line(m) for m in substitutions(line, position))
    # Field 5 is only covered by the mod-11 DV, which folds remainders 0, 1 and 10 into "1";
    # outside that fold every change to the due factor or amount is caught too.
    if line[32] != "1":
        for position in range(33, 47):
            assert not any(is_valid_boleto_line(m) for m in substitutions(line, position))
