"""Public identifiers: a prefix plus random characters from an unambiguous alphabet."""

from __future__ import annotations

import functools
import os
import random
from binascii import b2a_base64
from collections.abc import Callable
from typing import NoReturn

_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"
_URLSAFE = bytes.maketrans(b"+/", b"-_")
_REFILL_BYTES = 1 << 16
_RECIP_BPF = 2.0**-53


def new_id(rng: random.Random, prefix: str, length: int = 16) -> str:
    if isinstance(rng, BufferedSystemRandom):
        return prefix + rng.characters(_ALPHABET, length)
    return prefix + "".join(rng.choices(_ALPHABET, k=length))


class BufferedSystemRandom(random.Random):
    """The OS's CSPRNG, read 64 KiB at a time.

    `random.SystemRandom` makes one `getrandom` system call per number, which was a fifth of the
    cost of creating a payment. The bytes are the same kernel randomness, only fetched in bulk;
    like SystemRandom, it cannot be seeded and has no state to save.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._position = 0
        super().__init__()

    def seed(self, *args: object, **kwargs: object) -> None:
        return None

    def getstate(self) -> NoReturn:
        raise NotImplementedError("BufferedSystemRandom has no state to save")

    def setstate(self, state: object) -> None:
        raise NotImplementedError("BufferedSystemRandom has no state to restore")

    def _take(self, count: int) -> bytes:
        start = self._position
        end = start + count
        if end > len(self._buffer):
            self._buffer = os.urandom(max(_REFILL_BYTES, count))
            start, end = 0, count
        self._position = end
        return self._buffer[start:end]

    def random(self) -> float:
        return (int.from_bytes(self._take(7)) >> 3) * _RECIP_BPF

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        size = (k + 7) // 8
        return int.from_bytes(self._take(size)) >> (size * 8 - k)

    def randbytes(self, n: int) -> bytes:
        return self._take(n)

    def token_hex(self, nbytes: int) -> str:
        return self._take(nbytes).hex()

    def characters(self, alphabet: str, length: int) -> str:
        """`length` characters drawn uniformly from `alphabet` (ASCII, at most 256 of them)."""
        table, refused = _byte_mapping(alphabet)
        # A few bytes more than asked for, so the bytes refused (up to 7% for 34 characters)
        # rarely leave it short: one draw, where one per shortfall took half again as long.
        # The buffer is read in place (no `_take` call) when it holds enough: an id per payment.
        start = self._position
        end = start + length + (length >> 2) + 2
        if end <= len(self._buffer):
            self._position = end
            chosen = self._buffer[start:end].translate(table, refused)
        else:
            chosen = self._take(end - start).translate(table, refused)
        while len(chosen) < length:
            chosen += self._take(length).translate(table, refused)
        return chosen[:length].decode("ascii")


@functools.cache
def _byte_mapping(alphabet: str) -> tuple[bytes, bytes]:
    """For `bytes.translate`: each random byte to `alphabet[byte % size]`, and the bytes to drop
    (at or above the largest multiple of the size: they would favour the first characters).
    The drawing then runs in C: it was a tenth of the cost of creating a payment in Python."""
    if not alphabet.isascii() or not 0 < len(alphabet) <= 256:
        raise ValueError("the alphabet must be 1-256 ASCII characters")
    size = len(alphabet)
    usable = 256 - 256 % size
    table = bytes(ord(alphabet[byte % size]) for byte in range(256))
    return table, bytes(range(usable, 256))


# Record ids (jobs, movements, deliveries, request ids) need uniqueness, not a reproducible seed:
# one bulk-read source for all of them keeps a system call off every write.
_RECORD_IDS = BufferedSystemRandom()


def token_hex(nbytes: int) -> str:
    """Like `secrets.token_hex`, from OS randomness read in bulk (a request id, a job id...)."""
    return _RECORD_IDS._take(nbytes).hex()


# Identifiers and tokens in answers come from the app's generator (`DomainContext.rng`): the OS's
# CSPRNG on every `serve`, so unpredictable, and seeded in tests, so a seeded server answers the
# same bytes to the same requests. `rng=None` (a service built without one, in unit tests) draws
# from the OS.


def hex_token(rng: random.Random | None, nbytes: int) -> str:
    """Like `secrets.token_hex`, from `rng`."""
    return (_RECORD_IDS if rng is None else rng).randbytes(nbytes).hex()


def urlsafe_token(rng: random.Random | None, nbytes: int) -> str:
    """Like `secrets.token_urlsafe`, from `rng`."""
    raw = (_RECORD_IDS if rng is None else rng).randbytes(nbytes)
    # What base64.urlsafe_b64encode does, without its two Python frames (a production hosted
    # payment's page token, per payment).
    return b2a_base64(raw, newline=False).translate(_URLSAFE).rstrip(b"=").decode()


def unused(draw: Callable[[], str], lookup: Callable[[str], object | None]) -> str:
    """The first value `draw` gives that `lookup` (a table's `get`) finds nothing for.

    A seeded server restarted on its data dir starts its generator again (its seed mixes in only
    the numbers of events and transactions), so it can draw an id it drew before: a stored
    record's id must never be handed out twice, or a write would replace that record.
    """
    while True:
        ident = draw()
        if lookup(ident) is None:
            return ident
