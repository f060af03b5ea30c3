"""Public ids drawn from OS randomness: the alphabet, the length, and no bias between characters."""

from __future__ import annotations

import base64
import random
from collections import Counter

import pytest

from simulator.domain.ids import BufferedSystemRandom, new_id, urlsafe_token

ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"


def test_ids_have_the_prefix_the_length_and_only_the_alphabet() -> None:
    rng = BufferedSystemRandom()
    ids = {new_id(rng, "TXN-") for _ in range(2000)}
    assert len(ids) == 2000
    for tx_id in ids:
        assert tx_id.startswith("TXN-") and len(tx_id) == 20
        assert set(tx_id[4:]) <= set(ALPHABET)


def test_every_character_is_about_equally_likely() -> None:
    # 34 characters do not divide 256: without dropping bytes 238-255, the first 18 characters
    # would come 8/7 as often as the others (a 14% excess, far outside this test's margin).
    counts = Counter("".join(BufferedSystemRandom().characters(ALPHABET, 64) for _ in range(5000)))
    expected = 5000 * 64 / len(ALPHABET)
    assert set(counts) == set(ALPHABET)
    assert all(abs(count - expected) < 0.06 * expected for count in counts.values())


def test_a_long_draw_refills_past_the_dropped_bytes() -> None:
    drawn = BufferedSystemRandom().characters("AB", 100_000)  # 2 divides 256: nothing dropped
    assert len(drawn) == 100_000 and set(drawn) == {"A", "B"}
    odd = BufferedSystemRandom().characters("ABC", 70_000)  # 255 is dropped
    assert len(odd) == 70_000 and set(odd) == {"A", "B", "C"}


def test_a_non_ascii_alphabet_is_refused() -> None:
    with pytest.raises(ValueError):
        BufferedSystemRandom().characters("ÅB", 4)


def test_a_seeded_rng_still_gives_reproducible_ids() -> None:
    assert new_id(random.Random(7), "CLM-") == new_id(random.Random(7), "CLM-")


@pytest.mark.parametrize("nbytes", [0, 1, 2, 3, 24, 32, 33])
def test_urlsafe_tokens_are_what_base64_urlsafe_makes(nbytes: int) -> None:
    made = urlsafe_token(random.Random(nbytes), nbytes)
    raw = random.Random(nbytes).randbytes(nbytes)
    assert made == base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
