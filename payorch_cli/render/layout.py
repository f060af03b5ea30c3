"""The one way the CLI lays out a list or an object for people, at any terminal width (80
columns is the width it is designed and tested for).

Rules, each from a stumble at 80 columns (issue 36 item 5):
- nothing is folded mid-token: an id, URL, PIX code, barcode or key is copied from the terminal,
  so a value too long for its column moves to a line of its own, whole, instead;
- a list drops the columns that do not fit to a line under its row rather than wrapping cells;
- no line is padded with trailing spaces (they wrap on a narrower terminal and are copied along).
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.text import Text

INDENT = "  "
GAP = "  "
# A value under one of these names is something to copy even when it holds spaces (a PIX code
# carries the beneficiary's city): it goes whole on a line of its own, never word-wrapped.
COPYABLE = re.compile(r"(?i)(url|code|barcode|line|secret|key|token|clabe|id|reference)$")
# Narrower than this, prose goes on a line of its own rather than into a sliver of a column.
MIN_WRAP = 20
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$")


def terminal_width() -> int:
    """The terminal's columns (COLUMNS wins, as for every tool); 80 when not a terminal."""
    return shutil.get_terminal_size((80, 24)).columns


def rendered(renderable: RenderableType, width: int | None = None) -> str:
    """The renderable as text (styled on a terminal), every line without trailing spaces and
    nothing cropped: a line longer than the width is a whole value the terminal may soft-wrap."""
    import io

    from rich.console import Console

    out = io.StringIO()
    tty = sys.stdout.isatty()
    console = Console(
        file=out,
        width=width or terminal_width(),
        force_terminal=tty,
        color_system="auto" if tty else None,
        highlight=False,
    )
    console.print(renderable, crop=False)
    return "\n".join(_strip_trailing(line) for line in out.getvalue().splitlines())


def _strip_trailing(line: str) -> str:
    stripped = _TRAILING.sub(r"\1", line)
    while stripped != line:  # padding may sit between several style codes
        line, stripped = stripped, _TRAILING.sub(r"\1", stripped)
    return stripped


def wrapped_text(text: str, width: int | None = None) -> str:
    """A message's lines wrapped at words to the terminal's width; a word longer than the width
    (a URL, an id) stays whole on its line, for the terminal to soft-wrap."""
    columns = width or terminal_width()
    return "\n".join(_wrap_line(line, columns) for line in text.split("\n"))


def _wrap_line(line: str, columns: int) -> str:
    if len(line) <= columns:
        return line.rstrip()
    indent = line[: len(line) - len(line.lstrip())]
    parts = textwrap.wrap(
        line,
        max(columns, MIN_WRAP),
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(parts) or line.rstrip()


def show(renderable: Any) -> None:
    sys.stdout.write(rendered(renderable) + "\n")


def _line(*parts: str | tuple[str, str]) -> Text:
    from rich.text import Text

    text = Text.assemble(*parts)
    text.no_wrap, text.overflow = True, "ignore"
    return text


class _Lines:
    """A renderable whose lines are computed for the width it is given (so it lays out the same
    inside a Group as alone)."""

    def lines(self, width: int) -> list[Text]:
        raise NotImplementedError

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield from self.lines(options.max_width)


# ---- detail: one object -------------------------------------------------------------------


def flatten(obj: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """An object's fields as (dotted name, text): nested objects become `fees.total`, empty
    values are left out (the JSON has them), lists of objects are counted."""
    rows: list[tuple[str, str]] = []
    for name, value in obj.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, dict):
            rows.extend(flatten(value, f"{dotted}."))
        elif (text := scalar_text(value)) is not None:
            rows.append((dotted, text))
    return rows


def scalar_text(value: Any) -> str | None:
    """A value as a person reads it; None for nothing worth a line."""
    if value is None or value == [] or value == "":
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        if all(not isinstance(item, dict | list) for item in value):
            return ", ".join(str(item) for item in value)
        return f"{len(value)} entries (--json lists them)"
    return str(value)


@dataclass
class Detail(_Lines):
    """A title line, then `name  value` lines; a value too long for the line goes whole on a
    line of its own under its name."""

    title: str
    fields: Sequence[tuple[str, str]]
    hint: str | None = None

    def lines(self, width: int) -> list[Text]:
        out = [_line((self.title, "bold"))]
        names = max((len(name) for name, _ in self.fields), default=0)
        for name, value in self.fields:
            out.extend(_field_lines(name, value, names, width))
        if self.hint:
            out.append(_line((self.hint, "dim")))
        return out


def _field_lines(name: str, value: str, names: int, width: int) -> list[Text]:
    room = width - len(INDENT) - names - len(GAP)
    label = (INDENT + name.ljust(names), "cyan")
    if len(value) <= room and "\n" not in value:
        return [_line(label, GAP + value)]
    if " " in value and not COPYABLE.search(name) and room >= MIN_WRAP:
        wrapped = textwrap.wrap(value, room, break_long_words=False, break_on_hyphens=False)
        if all(len(part) <= room for part in wrapped):
            pad = " " * (width - room)
            return [_line(label, GAP + wrapped[0]), *(_line(pad + part) for part in wrapped[1:])]
    inner = INDENT * 2
    alone = inner + value if len(inner) + len(value) <= width else value
    return [_line((INDENT + name, "cyan")), _line(alone)]


# ---- columns: a list ----------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    header: str
    right: bool = False
    style: str = ""
    # Moved to a line under its row, as `header value`, when the row would pass the width.
    spill: bool = False
    # Left out when the row would pass the width (the view says where to find it).
    optional: bool = False
    # A style for a cell of this exact text (coverage's `never` in red).
    marks: tuple[tuple[str, str], ...] = ()

    def style_of(self, text: str) -> str:
        return next((style for mark, style in self.marks if mark == text), self.style)


@dataclass
class Columns(_Lines):
    """Rows of cells, each column as wide as its widest cell, never wrapped or cut: the spill
    columns go under their row when the row does not fit, and a footer line follows."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[str]]
    footer: str | None = None

    def lines(self, width: int) -> list[Text]:
        kept = self._fitting(width)
        out: list[Text] = []
        if self.rows:
            out.append(_line((self._joined(kept, [c.header for c in self.columns]), "bold")))
        for row in self.rows:
            out.append(self._row_line(kept, row))
            out.extend(self._spilled(kept, row, width))
        if self.footer:
            out.append(_line((self.footer, "dim")))
        return out

    def _width_of(self, index: int) -> int:
        cells = [self.columns[index].header, *(row[index] for row in self.rows)]
        return max(len(cell) for cell in cells)

    def _fitting(self, width: int) -> list[int]:
        """Every column, less optional columns then spill columns from the right until the
        row fits."""
        # A column nobody has a value in is left out, header and all.
        kept = [i for i in range(len(self.columns)) if any(row[i] for row in self.rows)]
        for kind in ("optional", "spill"):
            for index in reversed(kept[:]):
                if self._total(kept) <= width:
                    return kept
                if getattr(self.columns[index], kind):
                    kept.remove(index)
        return kept

    def _total(self, indexes: Iterable[int]) -> int:
        widths = [self._width_of(i) for i in indexes]
        return sum(widths) + len(GAP) * (len(widths) - 1)

    def _joined(self, kept: list[int], cells: Sequence[str]) -> str:
        return GAP.join(self._cell(i, cells[i]) for i in kept)

    def _cell(self, index: int, text: str) -> str:
        width = self._width_of(index)
        return text.rjust(width) if self.columns[index].right else text.ljust(width)

    def _row_line(self, kept: list[int], row: Sequence[str]) -> Text:
        parts: list[str | tuple[str, str]] = []
        for position, index in enumerate(kept):
            if position:
                parts.append(GAP)
            column = self.columns[index]
            parts.append((self._cell(index, row[index]), column.style_of(row[index])))
        return _line(*parts)

    def _spilled(self, kept: list[int], row: Sequence[str], width: int) -> list[Text]:
        """The spilled cells of a row, `header value`, on one line under it when they fit there,
        else one a line."""
        cells = [
            (f"{self.columns[i].header} ", row[i])
            for i in range(len(self.columns))
            if i not in kept and row[i] and self.columns[i].spill
        ]
        together = INDENT + GAP.join(head + value for head, value in cells)
        if len(together) <= width:
            parts: list[str | tuple[str, str]] = [INDENT]
            for position, (head, value) in enumerate(cells):
                parts.extend([GAP] if position else [])
                parts.extend([(head, "dim"), value])
            return [_line(*parts)] if cells else []
        return [line for head, value in cells for line in _wrapped(head, value, width)]


def _wrapped(head: str, value: str, width: int) -> list[Text]:
    """`  head value`, prose wrapped at words under the value; a token is never split."""
    room = max(width - len(INDENT) - len(head), MIN_WRAP)
    parts = textwrap.wrap(value, room, break_long_words=False, break_on_hyphens=False) or [""]
    pad = " " * (len(INDENT) + len(head))
    return [_line(INDENT, (head, "dim"), parts[0]), *(_line(pad + part) for part in parts[1:])]
