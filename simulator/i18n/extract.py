"""Babel's extractor for the page templates: the `_{...}` texts of `simulator/templates/`.

`simulator/i18n/babel.cfg` names it for `pybabel extract`; `tests/unit/test_i18n.py` calls it to
hold the catalogues to the templates.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

from simulator.i18n import MARKER, normalize


def extract_templates(
    fileobj: IO[bytes],
    keywords: Collection[str],
    comment_tags: Collection[str],
    options: Mapping[str, Any],
) -> Iterator[tuple[int, None, str, list[str]]]:
    """(line, no function, message, no comments) for each marker, in file order."""
    text = fileobj.read().decode(options.get("encoding", "utf-8"))
    for match in MARKER.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        yield line, None, normalize(match[1]), []


def extract_fixtures(
    fileobj: IO[bytes],
    keywords: Collection[str],
    comment_tags: Collection[str],
    options: Mapping[str, Any],
) -> Iterator[tuple[int, None, str, list[str]]]:
    """The English texts of the payment-method catalogue a buyer reads on the pages: the name and
    label of each sandbox built-in (`sandboxOnly`), and the help of each field a rail asks for
    (the labels are already local: CPF, DNI, Correo electrónico)."""
    import yaml

    text = fileobj.read().decode(options.get("encoding", "utf-8"))
    for method in yaml.safe_load(text).get("paymentMethods", []):
        texts = [field.get("help", "") for field in method.get("requiredFields") or []]
        if method.get("sandboxOnly"):
            texts = [method["name"], method["methodLabel"], *texts]
        for message in texts:
            if message:
                found = text.find(message)
                yield text.count("\n", 0, max(found, 0)) + 1, None, normalize(message), []
