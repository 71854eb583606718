"""The aiohttp web server of `sift serve`: the probes, and the routes every surface adds."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from bot.access_log import log_access
from bot.proxy import TrustedProxies

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str = ""


HealthCheck = Callable[[], Awaitable[Health]]


def _health_handler(
    checks: Mapping[str, HealthCheck], timeout_s: float
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def healthz(request: web.Request) -> web.Response:
        async def run(check: HealthCheck) -> Health:
            try:
                return await asyncio.wait_for(check(), timeout_s)
            except Exception as exc:  # a failing check is a finding, not a server error
                return Health(False, f"{type(exc).__name__}: {exc}")

        results = await asyncio.gather(*(run(c) for c in checks.values()))
        body: dict[str, object] = {
            name: {"ok": r.ok, **({"detail": r.detail} if r.detail else {})}
            for name, r in zip(checks, results, strict=True)
        }
        healthy = all(r.ok for r in results)
        body["status"] = "ok" if healthy else "unhealthy"
        body["pid"] = os.getpid()  # which process answered (with SIFT_WORKERS, one of several)
        return web.json_response(body, status=200 if healthy else 503)

    return healthz


class Readiness:
    """What is still loading after the server started (the embedding model, say)."""

    def __init__(self) -> None:
        self._loading: dict[str, str] = {}

    def loading(self, name: str, detail: str) -> None:
        self._loading[name] = detail

    def done(self, name: str) -> None:
        self._loading.pop(name, None)

    @property
    def pending(self) -> dict[str, str]:
        return dict(self._loading)


def _ready_handler(readiness: Readiness, health: Callable[[web.Request], Awaitable[web.Response]]
                   ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def readyz(request: web.Request) -> web.Response:
        pending = readiness.pending
        if pending:
            return web.json_response({"status": "loading", "loading": pending}, status=503)
        return await health(request)  # loaded: ready when its dependencies answer

    return readyz


async def livez(request: web.Request) -> web.Response:
    """The process and its event loop are alive (this ran on the loop): for restarts only,
    so it asks no dependency; a frozen Weaviate must not restart every replica."""
    return web.json_response({"status": "ok", "pid": os.getpid()})


def build_web_app(checks: Mapping[str, HealthCheck], *, timeout_s: float = 5.0,
                  readiness: Readiness | None = None,
                  proxies: TrustedProxies | None = None,
                  access_log: bool = False) -> web.Application:
    """/livez: the process lives; /readyz: 503 naming what still loads, then each dependency's
    health (a load balancer sends questions only once it says 200); /healthz: the dependency
    checks alone, as before /readyz existed. A readiness check is one more entry in `checks`.
    `proxies`: whose X-Forwarded-* headers every route sees as the real client
    (bot/proxy.py); `access_log`: a line per request (bot/access_log.py)."""
    middlewares: list[Middleware] = [proxies.middleware] if proxies is not None else []
    if access_log:
        middlewares.append(log_access)
    app = web.Application(client_max_size=4 * 1024 * 1024, middlewares=middlewares)
    health = _health_handler(checks, timeout_s)
    app.router.add_get("/livez", livez)
    app.router.add_get("/healthz", health)
    app.router.add_get("/readyz", _ready_handler(readiness or Readiness(), health))
    return app


async def start_site(app: web.Application, host: str, port: int, *,
                     shared: bool = False) -> web.AppRunner:
    """Serve `app`; `shared`: other processes bind the same port too (SO_REUSEPORT), and the
    kernel spreads new connections over them."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=shared or None)
    await site.start()
    log.info("listening on http://%s:%s", host, port)
    return runner
