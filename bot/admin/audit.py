"""The Audit page: every admin action of a window, newest first (admins only)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from aiohttp import web

from bot.admin.console import KEY, render, require_admin
from storage.columns import utc_now

WINDOWS = {"1d": 1, "7d": 7, "30d": 30, "90d": 90, "365d": 365}
ACTIONS = ("sign_in", "sign_in_failed", "policy_saved", "policy_removed", "override",
           "sync_started")


async def audit_page(request: web.Request) -> web.StreamResponse:
    require_admin(request)  # who signed in from where is for admins
    console = request.app[KEY]
    window = request.query.get("window", "7d")
    action = request.query.get("action", "")
    since = utc_now() - timedelta(days=WINDOWS.get(window, 7))
    events = await asyncio.to_thread(console.audit.since, since,
                                     action=action if action in ACTIONS else "", limit=500)
    return render(request, "audit.html", events=events, window=window, windows=list(WINDOWS),
                  action=action, actions=ACTIONS,
                  retention=console.settings.storage.audit_retention_days)
