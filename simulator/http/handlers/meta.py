"""GET /api/v1/openapi.json: the OpenAPI 3.1 document the server validates requests with."""

from __future__ import annotations

from aiohttp import web

from simulator.http.middlewares import auth
from simulator.openapi.document import document_json


@auth("none")
async def openapi_document(request: web.Request) -> web.Response:
    # Built once per process; the same bytes for every caller (no credential needed).
    return web.Response(body=document_json(), content_type="application/json")
