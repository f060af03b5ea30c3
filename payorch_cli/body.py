"""Request bodies from the command line, in the Stripe CLI's manner: `--data JSON` for a whole
object, `-d key=value` for one field (a string), `-d key:=JSON` for one typed field (httpie's
`:=`: numbers, booleans, null, objects), `-d recipient[name]=Ana` for a nested one. Named options
(`--amount`...) win over `-d`, which wins over `--data`.

A malformed value is a `typer.BadParameter`: the command exits 2 with one line and sends nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import typer

# `key`, then any number of `[subkey]`: `recipient[name]`, `metadata[order][id]`.
_KEY = re.compile(r"(?P<head>[A-Za-z_][\w-]*)(?P<tail>(?:\[[^\[\]=:]+\])*)")
# The most a --data document may nest: json.loads recurses, and a deep one would be a traceback.
MAX_DEPTH = 32


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _json(text: str, what: str) -> Any:
    try:
        value = json.loads(text)
    except RecursionError:
        raise typer.BadParameter(f"{what} nests deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{what} is not JSON ({exc.msg} at column {exc.colno})") from None
    if _depth(value) > MAX_DEPTH:
        raise typer.BadParameter(f"{what} nests deeper than {MAX_DEPTH} levels")
    return value


def json_object(text: str) -> dict[str, Any]:
    """A `--data` value: a JSON object."""
    value = _json(text, "--data")
    if not isinstance(value, dict):
        raise typer.BadParameter(f"--data must be a JSON object, not {type(value).__name__}")
    return value


def field(text: str) -> tuple[list[str], Any]:
    """One `-d` value: its key path and its value."""
    typed = re.match(r"([^=:]+):=(.*)\Z", text, re.S)
    plain = re.match(r"([^=]+)=(.*)\Z", text, re.S)
    match = typed or plain
    if match is None:
        raise typer.BadParameter(
            f"{text!r} is not key=value (a string) or key:=JSON (a number, true, an object...)"
        )
    key, raw = match.group(1), match.group(2)
    parts = _KEY.fullmatch(key)
    if parts is None:
        raise typer.BadParameter(f"{key!r} is not a field name (write amount or recipient[name])")
    path = [parts["head"], *re.findall(r"\[([^\]]+)\]", parts["tail"])]
    value = _json(raw, f"the value of {key}") if typed else raw
    return path, value


def build(
    data: dict[str, Any] | None, fields: Iterable[str], named: dict[str, Any]
) -> dict[str, Any]:
    """The body: `data`, then each `-d` field, then the named options that were given."""
    body: dict[str, Any] = dict(data or {})
    for text in fields:
        path, value = field(text)
        target = body
        for name in path[:-1]:
            nested = target.get(name)
            if not isinstance(nested, dict):
                nested = target[name] = {}
            target = nested
        target[path[-1]] = value
    body.update({name: value for name, value in named.items() if value is not None})
    return body
