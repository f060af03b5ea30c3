"""Public identifiers: a prefix plus random characters from an unambiguous alphabet."""

from __future__ import annotations

import random

_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"


def new_id(rng: random.Random, prefix: str, length: int = 16) -> str:
    return prefix + "".join(rng.choices(_ALPHABET, k=length))
