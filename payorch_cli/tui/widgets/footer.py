"""The footer of every main screen: Textual's, compact, and never cut in the middle of a key.

Textual's footer lays the keys out in one row and crops whatever passes the right edge, behind
the command palette's key ("2 Bala▏^p palette"). This one keeps the keys in their order (the
screen's own first, then the app's) and leaves out, whole, those that do not fit; the palette's
key always shows, and the palette lists every action.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


def key_width(key: FooterKey, *, compact: bool = True) -> int:
    """Cells a key takes in the row: its key, a space and its description, then a gap (the
    footer's own CSS: key padding 0 1 and description padding 0 1 0 0 when not compact)."""
    width = cell_len(key.key_display)
    if key.description:
        width += 1 + cell_len(key.description)
    return width + 1 if compact else width + 3


class FittingFooter(Footer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(compact=True, **kwargs)

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        palette = [k for k in keys if k.has_class("-command-palette")]
        keys = [k for k in keys if k not in palette]
        others = [w for w in widgets if w not in keys and w not in palette]
        # The palette key is docked right: a border cell, its key, a space, its description.
        # The last key shown needs no gap after it: the palette's border separates them.
        room = self.size.width - sum(1 + key_width(key, compact=True) for key in palette) + 1
        shown: list[FooterKey] = []
        for key in keys:
            width = key_width(key, compact=self.compact)
            if width > room:
                break  # keys keep their order: none after one that does not fit
            room -= width
            shown.append(key)
        yield from others
        yield from shown
        yield from palette

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.recompose)  # what fits depends on the width
