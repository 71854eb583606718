"""/mcp on the `sift serve` app: the MCP SDK's streamable HTTP transport, bridged from aiohttp
to ASGI by aiohttp-asgi, behind the bearer gate (gate.py)."""

from __future__ import annotations

import contextlib

from aiohttp import web
from aiohttp_asgi import ASGIResource
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.auth import WELL_KNOWN, Bearers, metadata_handler, metadata_url
from bot.api.calls import Calls
from bot.chat.flow import ChatFlow
from bot.chat.tasks import Background
from bot.mcp.gate import BearerGate
from bot.mcp.tools import build_server

PATH = "/mcp"


class Mcp:
    """Stateless streamable HTTP: each POST stands alone, so any `sift serve` process or
    replica answers any request (nothing of a session lives in one process's memory)."""

    def __init__(self, flow: ChatFlow, bearers: Bearers, *, base_url: str, host: str,
                 issuer: str = "", max_in_flight: int = 0) -> None:
        self._calls = Calls(flow, Background("MCP", limit=max_in_flight))
        server = build_server(self._calls)
        # Called for the session manager it makes. Replies are JSON, not an SSE stream: the
        # SDK's streamed replies never finished through aiohttp-asgi (the client waited on).
        server.streamable_http_app(stateless_http=True, json_response=True, host=host)
        self._manager = server.session_manager
        # The resource a token must be issued for (RFC 8707): /mcp as people reach it.
        self._asgi = BearerGate(_no_stream(self._manager.handle_request), bearers,
                                base_url.rstrip("/") + PATH, metadata_url(base_url, PATH))
        self._metadata = metadata_handler(base_url, PATH, issuer)
        self._running = contextlib.AsyncExitStack()

    def mount(self, app: web.Application) -> None:
        # RFC 9728 §3.1 names the resource's own path; the bare one serves clients that
        # look there first.
        app.router.add_get(WELL_KNOWN + PATH, self._metadata)
        app.router.add_get(WELL_KNOWN, self._metadata)
        app.router.register_resource(ASGIResource(self._asgi, root_path=PATH))

    async def start(self) -> None:
        await self._running.enter_async_context(self._manager.run())

    async def drain(self, timeout_s: float = 30.0) -> None:
        await self._calls.background.drain(timeout_s)

    async def close(self) -> None:
        await self._running.aclose()


def _no_stream(app: ASGIApp) -> ASGIApp:
    """A GET (the stream of server-initiated messages) is 405, as the transport allows: a
    stateless server sends none, and the SDK's idle stream spun a core through aiohttp-asgi
    (the MCP Inspector opens one)."""
    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await send({"type": "http.response.start", "status": 405,
                        "headers": [(b"allow", b"POST"), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return serve
