"""Document and bank-account validators: published vectors, round-trips and mutation checks.

Mutation properties are stated only where the algorithm guarantees them: Receita's mod 11 maps
remainders 0 and 1 to the same digit, and CURP/RFC weights share factors with their modulus, so
for those only the check digits themselves are mutated (or the precondition is spelled out).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.domain.documents import (
    clabe_check_digit,
    document_kind_for_country,
    generate_cbu,
    generate_cnpj,
    generate_cpf,
    generate_curp,
    generate_rfc,
    is_valid_cbu,
    is_valid_clabe,
    is_valid_cnpj,
    is_valid_cpf,
    is_valid_curp,
    is_valid_document,
    is_valid_email,
    is_valid_rfc,
    is_valid_rut,
    normalize_digits,
)

FAST = settings(max_examples=100, deadline=None, derandomize=True)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
DIGITS = "0123456789"


def substitutions(value: str, position: int, alphabet: str = DIGITS) -> list[str]:
    """Every string that differs from `value` only at `position`, by a char of `alphabet`."""
    return [value[:position] + c + value[position + 1 :] for c in alphabet if c != value[position]]


# --- normalize_digits ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("529.982.247-25", "52998224725"),
        (" 16.727.230/0001-97 ", "16727230000197"),
        ("12a", "12a"),  # not a digit filter: validators still see the letter
    ],
)
def test_normalize_digits_drops_only_separators(raw: str, expected: str) -> None:
    assert normalize_digits(raw) == expected


# --- CPF / CNPJ ------------------------------------------------------------------------------


@pytest.mark.parametrize("cpf", ["529.982.247-25", "52998224725", "390.533.447-05"])
def test_cpf_known_valid(cpf: str) -> None:
    assert is_valid_cpf(cpf)


@pytest.mark.parametrize(
    "cpf",
    [
        "529.982.247-24",  # wrong second check digit
        "231.002.999-00",
        "111.111.111-11",  # passes the arithmetic, never issued
        "00000000000",
        "5299822472",  # 10 digits
        "529982247250",
        "52998224a25",
        "５２９９８２２４７２５",  # full-width digits are str.isdigit() but not a CPF
        "",
    ],
)
def test_cpf_known_invalid(cpf: str) -> None:
    assert not is_valid_cpf(cpf)


@pytest.mark.parametrize("cnpj", ["16.727.230/0001-97", "11.222.333/0001-81", "11222333000181"])
def test_cnpj_known_valid(cnpj: str) -> None:
    assert is_valid_cnpj(cnpj)


@pytest.mark.parametrize(
    "cnpj", ["16.727.230/0001-98", "11.222.333/0001-18", "00000000000000", "1122233300018", ""]
)
def test_cnpj_known_invalid(cnpj: str) -> None:
    assert not is_valid_cnpj(cnpj)


@pytest.mark.parametrize(
    ("value", "is_valid"), [("52998224725", is_valid_cpf), ("16727230000197", is_valid_cnpj)]
)
def test_brazil_known_vectors_reject_every_single_digit_change(value: str, is_valid) -> None:
    for position in range(len(value)):
        for mutant in substitutions(value, position):
            assert not is_valid(mutant), mutant


@FAST
@given(seeds)
def test_generated_cpf_validates_and_its_check_digits_are_tight(seed: int) -> None:
    cpf = generate_cpf(random.Random(seed))
    assert len(cpf) == 11 and is_valid_cpf(cpf)
    for position in (9, 10):
        assert not any(is_valid_cpf(m) for m in substitutions(cpf, position))
    # Remainders 0 and 1 share the digit 0; any other first check digit catches every typo.
    if cpf[9] != "0":
        for position in range(9):
            assert not any(is_valid_cpf(m) for m in substitutions(cpf, position))


@FAST
@given(seeds)
def test_generated_cnpj_validates_and_its_check_digits_are_tight(seed: int) -> None:
    cnpj = generate_cnpj(random.Random(seed))
    assert len(cnpj) == 14 and is_valid_cnpj(cnpj)
    for position in (12, 13):
        assert not any(is_valid_cnpj(m) for m in substitutions(cnpj, position))
    if cnpj[12] != "0":
        for position in range(12):
            assert not any(is_valid_cnpj(m) for m in substitutions(cnpj, position))


# --- CURP ------------------------------------------------------------------------------------


@pytest.mark.parametrize("curp", ["HEGG560427MVZRRL04", "BOXW310820HNERXN09", "hegg560427mvzrrl04"])
def test_curp_known_valid(curp: str) -> None:
    assert is_valid_curp(curp)


@pytest.mark.parametrize(
    "curp",
    [
        "BOXW310820HNERXN08",  # wrong check digit
        "HEGG560427MXXRRL04",  # XX is not a state
        "HEGG560427FVZRRL04",  # F is not a sex marker
        "HBGG560427MVZRRL04",  # second letter must be a vowel (or X)
        "HEGG560427MVZRAL04",  # inner "consonant" is a vowel
        "HEGG561327MVZRRL04",  # month 13
        "HEGG560427MVZRRL0",  # 17 chars
        "HEGG560427MVZRRL0A",  # check char must be a digit
    ],
)
def test_curp_known_invalid(curp: str) -> None:
    assert not is_valid_curp(curp)


def completes_to_valid_curp(first17: str) -> bool:
    """Whether some check digit makes `first17` a valid CURP (i.e. everything else is fine)."""
    return any(is_valid_curp(first17 + d) for d in DIGITS)


def test_curp_dates_are_real_and_the_differentiator_sets_the_century() -> None:
    assert not completes_to_valid_curp("HEGG560231MVZRRL0")  # 31 February
    assert completes_to_valid_curp("HEGG000229MVZRRLA")  # 29 Feb 2000: letter = born 2000+
    assert not completes_to_valid_curp("HEGG000229MVZRRL0")  # 29 Feb 1900 never existed
    assert completes_to_valid_curp("HEGG560427XNERRL0")  # sex X, born abroad (NE)


@FAST
@given(seeds)
def test_generated_curp_validates_and_its_check_digit_is_tight(seed: int) -> None:
    curp = generate_curp(random.Random(seed))
    assert len(curp) == 18 and is_valid_curp(curp)
    assert not any(is_valid_curp(m) for m in substitutions(curp, 17))


# --- RFC -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rfc", ["GODE561231GR8", "MAB9307148T4", "XAXX010101000", "XEXX010101000", "gode561231gr8"]
)
def test_rfc_known_valid(rfc: str) -> None:
    assert is_valid_rfc(rfc)


@pytest.mark.parametrize(
    "rfc",
    [
        "GODE561231GR9",  # wrong check digit
        "MAB9307148T5",
        "GODE561331GR8",  # month 13
        "GODE560231GR8",  # 31 February
        "GO1E561231GR8",  # digit among the letters
        "GODE561231GRB",  # check char is a digit or A
        "GODEX561231GR8",  # 14 chars
        "GO561231GR8",  # 11 chars
    ],
)
def test_rfc_known_invalid(rfc: str) -> None:
    assert not is_valid_rfc(rfc)


def test_rfc_check_digit_can_be_skipped_but_format_still_applies() -> None:
    assert is_valid_rfc("GODE561231GR9", check_digit=False)
    assert not is_valid_rfc("GODE560231GR9", check_digit=False)


def test_rfc_leap_day_uses_the_two_digit_year() -> None:
    assert any(is_valid_rfc("GODE000229GR" + c) for c in DIGITS + "A")
    assert not any(is_valid_rfc("GODE010229GR" + c) for c in DIGITS + "A")


@FAST
@given(seeds, st.booleans())
def test_generated_rfc_validates_and_its_check_digit_is_tight(seed: int, moral: bool) -> None:
    rfc = generate_rfc(random.Random(seed), moral=moral)
    assert len(rfc) == (12 if moral else 13) and is_valid_rfc(rfc)
    assert not any(is_valid_rfc(m) for m in substitutions(rfc, len(rfc) - 1, DIGITS + "A"))


# --- CLABE -----------------------------------------------------------------------------------


@pytest.mark.parametrize("clabe", ["032180000118359719", "002010077777777771"])
def test_clabe_known_valid(clabe: str) -> None:
    assert is_valid_clabe(clabe)
    assert clabe_check_digit(clabe[:17]) == clabe[17]


@pytest.mark.parametrize("clabe", ["032180000118359718", "03218000011835971", "03218000011835971X"])
def test_clabe_known_invalid(clabe: str) -> None:
    assert not is_valid_clabe(clabe)


@pytest.mark.parametrize("bad", ["", "0321800001183597", "0321800001183597a"])
def test_clabe_check_digit_refuses_anything_but_17_digits(bad: str) -> None:
    with pytest.raises(ValueError):
        clabe_check_digit(bad)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.text(alphabet="0123456789", min_size=17, max_size=17))
def test_clabe_check_digit_is_banxicos_sum_of_products_mod_10(first17: str) -> None:
    # The published procedure, digit by digit: each weight's product mod 10, summed.
    total = sum(int(d) * (3, 7, 1)[i % 3] % 10 for i, d in enumerate(first17))
    assert clabe_check_digit(first17) == str((10 - total % 10) % 10)


def test_clabe_catches_every_single_digit_change() -> None:
    # Weights 3, 7, 1 are all units mod 10, so no substitution can go unnoticed.
    clabe = "032180000118359719"
    for position in range(18):
        assert not any(is_valid_clabe(m) for m in substitutions(clabe, position))


# --- CBU -------------------------------------------------------------------------------------


def test_cbu_known_valid() -> None:
    assert is_valid_cbu("2850590940090418135201")
    assert is_valid_cbu("28505909-40090418135201")


@pytest.mark.parametrize(
    "cbu",
    [
        "2850590840090418135201",  # block 1 check digit
        "2850590940090418135202",  # block 2 check digit
        "285059094009041813520",
        "28505909400904181352011",
    ],
)
def test_cbu_known_invalid(cbu: str) -> None:
    assert not is_valid_cbu(cbu)


@FAST
@given(seeds)
def test_generated_cbu_validates_and_catches_every_single_digit_change(seed: int) -> None:
    # Weights 7, 1, 3, 9 are all units mod 10: every substitution in either block is caught.
    cbu = generate_cbu(random.Random(seed))
    assert len(cbu) == 22 and is_valid_cbu(cbu)
    for position in range(22):
        assert not any(is_valid_cbu(m) for m in substitutions(cbu, position))


# --- RUT -------------------------------------------------------------------------------------


@pytest.mark.parametrize("rut", ["12.345.678-5", "76086428-5", "12.531.909-2", "125319092"])
def test_rut_known_valid(rut: str) -> None:
    assert is_valid_rut(rut)


@pytest.mark.parametrize("rut", ["12.345.678-6", "12531909-3", "123456-0", "123456789-0", "-", ""])
def test_rut_known_invalid(rut: str) -> None:
    assert not is_valid_rut(rut)


@FAST
@given(st.integers(min_value=1_000_000, max_value=99_999_999))
def test_rut_exactly_one_check_character_fits_any_body(body: int) -> None:
    accepted = [c for c in DIGITS + "K" if is_valid_rut(f"{body}-{c}")]
    assert len(accepted) == 1
    if accepted == ["K"]:
        assert is_valid_rut(f"{body}-k")  # people type it lower-case
    # The mapping from remainder to check character is one-to-one: every body typo is caught.
    rut = f"{body}{accepted[0]}"
    for position in range(len(rut) - 1):
        assert not any(is_valid_rut(m) for m in substitutions(rut, position))


# --- email -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "email", ["ana@example.com", "a.b+tag@mail.example.com.br", "x@y.co", f"{'a' * 64}@ex.com"]
)
def test_email_valid(email: str) -> None:
    assert is_valid_email(email)


@pytest.mark.parametrize(
    "email",
    [
        "",
        "ana",
        "@example.com",
        "ana@",
        "ana@example",
        "ana@example.",
        "ana@.com",
        "ana@exa..mple.com",
        "a@b@example.com",
        "ana maria@example.com",
        "ana@example.com\n",
        f"{'a' * 65}@ex.com",
        f"a@{'b' * 250}.com",  # over 254 chars
    ],
)
def test_email_invalid(email: str) -> None:
    assert not is_valid_email(email)


# --- per-country dispatch --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("iso3", "kind"),
    [
        ("MEX", "RFC/CURP"),
        ("BRA", "CPF"),
        ("COL", "CC"),
        ("ARG", "DNI"),
        ("CHL", "RUT"),
        ("PER", "DNI"),
        ("USA", "SSN"),
        ("mex", "RFC/CURP"),
        ("FRA", "ID"),
    ],
)
def test_document_kind_for_country(iso3: str, kind: str) -> None:
    assert document_kind_for_country(iso3) == kind


@pytest.mark.parametrize(
    ("iso3", "value", "expected"),
    [
        ("MEX", "GODE561231GR8", True),
        ("MEX", "HEGG560427MVZRRL04", True),
        ("MEX", "HEGG560427MVZRRL05", False),
        ("MEX", "12345678", False),
        ("BRA", "529.982.247-25", True),
        ("BRA", "16.727.230/0001-97", True),
        ("BRA", "529.982.247-24", False),
        ("CHL", "12.345.678-5", True),
        ("CHL", "12.345.678-K", False),
        ("COL", "1.020.304.050", True),
        ("COL", "123456", True),
        ("COL", "12345", False),
        ("COL", "12345678901", False),
        ("ARG", "12.345.678", True),
        ("ARG", "1234567", True),
        ("ARG", "123456", False),
        # CUIT/CUIL: 11 digits, a known prefix and a mod-11 check digit (AFIP's own CUIT first).
        ("ARG", "33-69345023-9", True),
        ("ARG", "33693450239", True),
        ("ARG", "20-12345678-6", True),
        ("ARG", "27123456780", True),
        ("ARG", "20-12345678-5", False),  # wrong check digit
        ("ARG", "33693450238", False),
        ("ARG", "10123456784", False),  # not a CUIT/CUIL prefix
        ("ARG", "123456789", False),  # neither a DNI nor a CUIT
        ("PER", "12345678", True),
        ("PER", "1234567", False),
        ("USA", "123-45-6789", True),
        ("USA", "12345678", False),
        ("usa", "123456789", True),
        ("FRA", "AB12", True),
        ("FRA", "X" * 40, True),
        ("FRA", "ABC", False),
        ("FRA", "X" * 41, False),
        ("FRA", "AB 12", False),
    ],
)
def test_is_valid_document(iso3: str, value: str, expected: bool) -> None:
    assert is_valid_document(iso3, value) is expected
