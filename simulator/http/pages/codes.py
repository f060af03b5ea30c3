"""Scannable images of payment codes, as inline SVG: the PIX QR code and numeric barcodes."""

from __future__ import annotations

from html import escape

import segno

from simulator.http.pages.html import Markup

# Interleaved 2 of 5: each digit is five elements, two of them wide (N = narrow, W = wide).
_ITF = {
    "0": "NNWWN",
    "1": "WNNNW",
    "2": "NWNNW",
    "3": "WWNNN",
    "4": "NNWNW",
    "5": "WNWNN",
    "6": "NWWNN",
    "7": "NNNWW",
    "8": "WNNWN",
    "9": "NWNWN",
}
_WIDE = 3  # wide:narrow ratio; the symbology allows 2.25 to 3
_QUIET = 10  # quiet zone on each side, in narrow units
_BAR_HEIGHT = 50


def qr_svg(data: str, title: str) -> Markup:
    """A QR code of `data` (error correction M, as payment QR codes use), scalable with CSS."""
    qr = segno.make_qr(data, error="m")
    # omitsize: only a viewBox, so the page's CSS sets the size on phones and desktops alike.
    svg = qr.svg_inline(scale=1, border=4, omitsize=True, title=title, svgclass="qr")
    return Markup(svg)


def boleto_barcode_digits(line: str) -> str:
    """The 44-digit barcode a boleto prints, rebuilt from its 47-digit typed line (FEBRABAN):
    bank+currency (4), general check digit (1), due factor+amount (14), free field (25)."""
    return line[0:4] + line[32] + line[33:47] + line[4:9] + line[10:20] + line[21:31]


def itf_svg(digits: str, title: str) -> Markup:
    """An Interleaved 2 of 5 barcode of a digit string (a leading 0 evens an odd length)."""
    if not digits.isascii() or not digits.isdigit():
        raise ValueError("ITF encodes digits only")
    if len(digits) % 2:
        digits = "0" + digits
    # Start (narrow bar, space, bar, space), pairs (first digit in bars, second in spaces), stop.
    widths = [1, 1, 1, 1]
    for a, b in zip(digits[::2], digits[1::2], strict=True):
        for bar, space in zip(_ITF[a], _ITF[b], strict=True):
            widths += [_WIDE if bar == "W" else 1, _WIDE if space == "W" else 1]
    widths += [_WIDE, 1, 1]
    rects, x = [], _QUIET
    for i, width in enumerate(widths):
        if i % 2 == 0:  # even positions are bars, odd ones spaces
            rects.append(f'<rect x="{x}" y="0" width="{width}" height="{_BAR_HEIGHT}"/>')
        x += width
    total = x + _QUIET
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="barcode" viewBox="0 0 {total} '
        f'{_BAR_HEIGHT}" preserveAspectRatio="none" shape-rendering="crispEdges" role="img">'
        f'<title>{escape(title)}</title><rect width="{total}" height="{_BAR_HEIGHT}" fill="#fff"/>'
        f'<g fill="#000">{"".join(rects)}</g></svg>'
    )
    return Markup(svg)
