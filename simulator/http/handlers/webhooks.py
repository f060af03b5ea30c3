"""Routes of the webhooks resource (filled in by its issue)."""

from __future__ import annotations

from aiohttp import web


def setup(app: web.Application) -> None:
    """Create this resource's services on `app` and register its routes."""
