"""GET /metrics: a Bearer token when SIFT_METRICS__TOKEN is set, else loopback clients only."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Mapping

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from bot.metrics.registry import Metrics
from bot.proxy import client_of
from bot.settings_check import is_loopback
from bot.web import HealthCheck

log = logging.getLogger(__name__)
NO_TOKEN = ("/metrics answers only on this machine while SIFT_METRICS__TOKEN is not set: set "
            "it, and scrape with the header 'Authorization: Bearer <token>'.")
BAD_TOKEN = "/metrics needs the header 'Authorization: Bearer <SIFT_METRICS__TOKEN>'."


class MetricsRoute:
    """Scrapes first ask the dependencies (`up`: Weaviate and the database) whether they
    answer, so the gauges are as fresh as the scrape."""

    def __init__(self, metrics: Metrics, token: str | None, up: Mapping[str, HealthCheck],
                 timeout_s: float = 5.0) -> None:
        self._metrics = metrics
        self._token = token
        self._up = up
        self._timeout_s = timeout_s

    def mount(self, app: web.Application) -> None:
        app.router.add_get("/metrics", self.handle)

    def _refusal(self, request: web.Request) -> web.Response | None:
        if self._token is None:
            if is_loopback(client_of(request).address):
                return None
            log.warning("refused /metrics to %s: SIFT_METRICS__TOKEN is not set",
                        client_of(request).address)
            return web.Response(status=403, text=NO_TOKEN)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                              self._token.encode()):
            return None
        return web.Response(status=401, text=BAD_TOKEN,
                            headers={"WWW-Authenticate": 'Bearer realm="sift-metrics"'})

    async def handle(self, request: web.Request) -> web.Response:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        await asyncio.gather(*(self._probe(name, check) for name, check in self._up.items()))
        body = await asyncio.to_thread(self._metrics.exposition)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _probe(self, name: str, check: HealthCheck) -> None:
        try:
            ok = (await asyncio.wait_for(check(), self._timeout_s)).ok
        except Exception:  # a check that fails or hangs means down, for this scrape
            ok = False
        self._metrics.up.labels(name).set(1 if ok else 0)
