"""The one-line header: server URL, merchant, on a team server the namespace's owner and quota,
environment, simulator clock, connection state."""

from __future__ import annotations

from datetime import UTC, timedelta

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from payorch_cli.tui import present

# Connection states, as the header shows them. The word is always there (NO_COLOR).
CONNECTION_LOOKS = {
    "connecting": ("◌ connecting", "bold yellow"),
    "live": ("● live", "bold green"),
    "polling": ("◌ polling", "bold yellow"),
    "disconnected": ("✖ disconnected", "bold white on red"),
}


class StatusHeader(Widget):
    """Rendered as one line; the merchant name gives way first when the terminal is narrow."""

    DEFAULT_CSS = """
    StatusHeader { height: 1; dock: top; background: $panel; }
    """

    server = reactive("")
    merchant = reactive("…")
    environment = reactive("")
    team = reactive("")  # `owner alice · 3/20 ns` on a team server; "" in local mode
    connection = reactive("connecting")
    detail = reactive("")  # why disconnected, when it will retry
    clock = reactive("")  # e.g. `2026-11-22 03:44:38Z +2d`; the year goes when narrow

    def on_mount(self) -> None:
        # The app paints every header it knows whenever the connection, key or clock changes.
        register = getattr(self.app, "register_header", None)
        if register is not None:
            register(self)

    def on_unmount(self) -> None:
        unregister = getattr(self.app, "unregister_header", None)
        if unregister is not None:
            unregister(self)

    def render(self) -> Text:
        env = self.environment or "?"
        env_style = "bold black on yellow" if env == "production" else "bold black on cyan"
        state, state_style = CONNECTION_LOOKS.get(self.connection, (self.connection, ""))
        tail = Text.assemble(
            (f" │ {self.team}" if self.team else ""),
            " │ ",
            (f" {env} ", env_style),
            " │ ",
            (self._clock_shown(), "bold"),
            " │ ",
            (state, state_style),
        )
        # Narrow terminals (80 columns) drop the badge so the merchant keeps some room.
        wide = self.size.width >= 100
        head = Text.assemble(
            (" payorch ", "bold reverse") if wide else "",
            " ",
            (self.server, "underline"),
            " │ ",
        )
        # Why it is disconnected, when there is room for it beside a readable merchant name.
        detail = Text(f" {self.detail}", style="italic") if self.detail else Text("")
        if self.size.width - head.cell_len - tail.cell_len - detail.cell_len >= 12:
            tail.append_text(detail)
        room = max(4, self.size.width - head.cell_len - tail.cell_len)
        merchant = Text(self.merchant, style="bold")
        merchant.truncate(room, overflow="ellipsis")
        line = head + merchant + tail
        line.truncate(max(1, self.size.width), overflow="ellipsis")
        return line

    def _clock_shown(self) -> str:
        if not self.clock:
            return "clock n/a"
        return self.clock if self.size.width >= 100 else self.clock[5:]


def clock_text(now_iso: str, offset_seconds: float, elapsed: float) -> str:
    """The simulator clock `elapsed` seconds after the server said `now_iso` (UTC)."""
    parsed = present.parse_time(now_iso)
    if parsed is None:
        return present.text(now_iso)
    now = parsed.astimezone(UTC) + timedelta(seconds=max(0.0, elapsed))
    shown = now.strftime("%Y-%m-%d %H:%M:%S") + "Z"
    offset = present.duration(offset_seconds)
    return f"{shown} {offset}" if offset else shown
