"""`payorch openapi`: print the OpenAPI 3.1 document the server serves at /api/v1/openapi.json."""

from __future__ import annotations

import sys


def openapi() -> None:
    """Print the OpenAPI 3.1 document (JSON) the server serves.

    The same document validates every request.
    """
    # Read from the installed package: no server needed, and no aiohttp import.
    from simulator.openapi.document import pretty_json

    sys.stdout.buffer.write(pretty_json())
    sys.stdout.buffer.flush()
