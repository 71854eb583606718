"""What `sift serve` says when it starts: one line per surface (on, or off and why) and source."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from bot.llm_setup import startup_line
from bot.settings import Settings, SourceSettings
from sync.connectors import registry

if TYPE_CHECKING:
    from bot.app import App



def _slack(settings: Settings, base: str) -> str:
    if settings.slack_bot_token is None:
        return "Slack: off (SIFT_SLACK_BOT_TOKEN is not set)"
    if settings.slack_app_token is not None:
        return "Slack: on, Socket Mode (SIFT_SLACK_APP_TOKEN is set; no public URL needed)"
    return f"Slack: on, HTTP events at {base}/slack/events"


def _teams(settings: Settings, base: str) -> str:
    if settings.teams.enabled is False:
        return "Teams: off (SIFT_TEAMS__ENABLED is false)"
    if not settings.teams_enabled:
        return ("Teams: off (SIFT_TEAMS_APP_ID is not set; to try Teams locally without an "
                "app, set SIFT_TEAMS__ENABLED=true and listen on 127.0.0.1)")
    if settings.teams_app_id:
        return f"Teams: on at {base}/api/messages (app {settings.teams_app_id})"
    return (f"Teams: on at {base}/api/messages for local testing only (anonymous: "
            "SIFT_TEAMS_APP_ID is not set)")


def _admin(on: bool, base: str) -> str:
    # Told, not read from the settings: the console drops the passwords once it has hashed them.
    return f"Admin console: on at {base}/admin/" if on else (
        "Admin console: off (neither SIFT_ADMIN__PASSWORD nor SIFT_ADMIN__OIDC__ISSUER is set)")


def _web_chat(settings: Settings, base: str, admin: bool) -> str:
    # Mirrors App.web_chat: beyond loopback, only behind the console's sign-in.
    from bot.settings_check import is_loopback

    if not settings.web_chat.enabled:
        return "Web chat: off (SIFT_WEB_CHAT__ENABLED is false)"
    if is_loopback(settings.host):
        return f"Web chat: open {base}/ in a browser"
    if admin:
        return f"Web chat: on at {base}/ for people signed in to the admin console"
    return (f"Web chat: off (SIFT_HOST {settings.host} is reachable from other machines and "
            "no sign-in protects it: set SIFT_ADMIN__PASSWORD or SIFT_ADMIN__OIDC__ISSUER)")


def _source(settings: Settings, name: str, last: datetime | None) -> str:
    if last is not None:
        when = f"last synced {last:%Y-%m-%d %H:%M} UTC"
    elif settings.sync.sync_on_start:
        when = "never synced; a first sync starts now"
    else:
        when = "never synced (run `sift sync`)"
    return f"Source {name}: {when}"


def _push(source: SourceSettings, base: str) -> str:
    """Where the platform should send its change notifications, for kinds that send them."""
    spec = registry.spec(source.kind)
    if spec is None or spec.push is None:
        return ""
    return f"; push notifications at {base}/sync/hooks/{source.name}"


def surface_lines(settings: Settings, last_syncs: Mapping[str, datetime | None], *,
                  admin: bool = False) -> list[str]:
    """The lines, in order: Slack, Teams, the admin console, web chat, then each source."""
    base = settings.public_url or f"http://{settings.host}:{settings.port}"
    lines = [_slack(settings, base), _teams(settings, base),
             _admin(admin, base), _web_chat(settings, base, admin)]
    lines += [_source(settings, s.name, last_syncs.get(s.name)) + _push(s, base)
              for s in settings.resolved_sources]
    return lines


async def announce(app: App, *, admin: bool = False) -> None:
    """Print the lines under "Sift is serving on …" (the sync dates come from the database)."""
    names = [s.name for s in app.settings.resolved_sources]
    last = {name: await asyncio.to_thread(app.sync_state.last_success, name) for name in names}
    print(f"  {startup_line(app.settings, app.llm_endpoint)}", flush=True)
    for line in surface_lines(app.settings, last, admin=admin):
        print(f"  {line}", flush=True)
