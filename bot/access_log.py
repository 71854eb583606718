"""The access log of `sift serve`: one line per request, the real client, no query string."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.proxy import client_of

log = logging.getLogger("sift.access")
# Probes and scrapes arrive every few seconds: at DEBUG, so the log stays about people.
QUIET = frozenset({"/livez", "/readyz", "/healthz", "/metrics"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def log_access(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Method, path (never the query, where tokens and codes travel), status, duration and
    the real client (bot/proxy.py), as a message and as fields for the JSON log."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        ms = (time.perf_counter() - started) * 1000
        client = client_of(request)
        level = logging.DEBUG if request.path in QUIET else logging.INFO
        log.log(level, "%s %s %d %.1fms from %s", request.method, request.path, status, ms,
                client.address, extra={"http_method": request.method, "http_path": request.path,
                                       "http_status": status, "duration_ms": round(ms, 1),
                                       "client": client.address})
