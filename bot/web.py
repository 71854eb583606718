"""The aiohttp web server of `sift serve`: /healthz plus the routes adapters add (Slack, Teams)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

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
        return web.json_response(body, status=200 if healthy else 503)

    return healthz


def build_web_app(checks: Mapping[str, HealthCheck], *, timeout_s: float = 5.0) -> web.Application:
    app = web.Application(client_max_size=4 * 1024 * 1024)
    app.router.add_get("/healthz", _health_handler(checks, timeout_s))
    return app


async def start_site(app: web.Application, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info("listening on http://%s:%s", host, port)
    return runner
