"""The footer of every main screen: Textual's, compact, and never cut in the middle of a key.

Textual's footer lays the keys out in one row and crops whatever passes the right edge, behind
the command palette's key ("2 Bala▏^p palette"). This one keeps the keys in their order (the
screen's own first, then the app's) and leaves out, whole, those that do not fit; the palette's
key always shows, and the palette lists every action.

Where not every key fits (80 columns), the keys that switch screens are shown as one (`1-5
Screens`) and the keys the screen already hints elsewhere (its filter bar's `s status:all`) are
left out, so the screen's actions, the clock and the key switcher still show.
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


SWITCH_SCREEN = "switch_mode("


def is_screen_key(key: FooterKey) -> bool:
    return key.action.removeprefix("app.").startswith(SWITCH_SCREEN)


def screens_key(keys: list[FooterKey]) -> FooterKey:
    """One key standing for the screen keys: `1-5 Screens` (a click goes to the first)."""
    displays = sorted(key.key_display for key in keys)
    shown = displays[0] if len(displays) == 1 else f"{displays[0]}-{displays[-1]}"
    first = keys[0]
    return FooterKey(first.key, shown, "Screens", first.action, tooltip="Switch screen").data_bind(
        compact=Footer.compact
    )


class FittingFooter(Footer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(compact=True, **kwargs)

    def _fit(self, keys: list[FooterKey], room: int) -> list[FooterKey]:
        shown: list[FooterKey] = []
        for key in keys:
            width = key_width(key, compact=self.compact)
            if width > room:
                break  # keys keep their order: none after one that does not fit
            room -= width
            shown.append(key)
        return shown

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        palette = [k for k in keys if k.has_class("-command-palette")]
        keys = [k for k in keys if k not in palette]
        others = [w for w in widgets if w not in keys and w not in palette]
        # The palette key is docked right: a border cell, its key, a space, its description.
        # The last key shown needs no gap after it: the palette's border separates them.
        room = self.size.width - sum(1 + key_width(key, compact=True) for key in palette) + 1
        # As written if every key fits; else the screen keys as one; else also without the
        # keys the screen hints elsewhere, as many as fit.
        for candidate in (keys, self._compacted(keys, drop_hinted=False)):
            shown = self._fit(candidate, room)
            if len(shown) == len(candidate):
                break
        else:
            shown = self._fit(self._compacted(keys, drop_hinted=True), room)
        yield from others
        yield from shown
        yield from palette

    def _compacted(self, keys: list[FooterKey], *, drop_hinted: bool) -> list[FooterKey]:
        """The keys with the screen keys as one, and with `drop_hinted` without the keys the
        screen lists in its HINTED_ELSEWHERE (actions it shows elsewhere: its filter bar)."""
        hinted = set(getattr(self.screen, "HINTED_ELSEWHERE", ())) if drop_hinted else set()
        screens = [key for key in keys if is_screen_key(key)]
        compact: list[FooterKey] = []
        for key in keys:
            if key.action in hinted:
                continue
            if is_screen_key(key):
                if key is screens[0]:
                    compact.append(screens_key(screens))
                continue
            compact.append(key)
        return compact

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.recompose)  # what fits depends on the width
