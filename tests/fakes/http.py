"""A base for local fake HTTP servers: an aiohttp app on a free loopback port."""

from __future__ import annotations

import ssl
from types import TracebackType

from aiohttp import web


class LocalServer:
    """Subclasses add routes to `self.app`; `async with` starts and stops the server. With a
    `tls` context it speaks HTTPS (the certificate from tests/fakes/tls.py's local CA)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.app = web.Application()
        self._runner: web.AppRunner | None = None
        self._tls = tls
        self.port = 0

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._tls)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> LocalServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()
