"""What `sift serve` says when it starts: one line per surface (on, or off and why) and source."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import datetime

from bot import surfaces
from bot.llm_setup import Endpoint, startup_line
from bot.settings import Settings, SourceSettings
from bot.surface_spec import Place
from sync.connectors import registry


def _admin(on: bool, base: str) -> str:
    # Told by the console's mount, which decides: a password, or single sign-on that checks out.
    return f"Admin console: on at {base}/admin/" if on else (
        "Admin console: off (neither SIFT_ADMIN__PASSWORD nor SIFT_ADMIN__OIDC__ISSUER is set)")


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


def place_of(settings: Settings, *, admin: bool = False) -> Place:
    """Where `sift serve` runs, as the surfaces' lines and checks need it."""
    base = settings.public_url or f"http://{settings.host}:{settings.port}"
    return Place(settings.host, base.rstrip("/"), console=admin)


def surface_lines(settings: Settings, last_syncs: Mapping[str, datetime | None], *,
                  admin: bool = False) -> list[str]:
    """The lines, in order: each chat surface (bot/surfaces.py), the admin console, then
    each source."""
    place = place_of(settings, admin=admin)
    lines = [spec.status(spec.config(settings), place) for spec in surfaces.SPECS]
    lines.append(_admin(admin, place.base_url))
    lines += [_source(settings, s.name, last_syncs.get(s.name)) + _push(s, place.base_url)
              for s in settings.resolved_sources]
    return lines


async def announce(settings: Settings, llm: Endpoint | None,
                   last_success: Callable[[str], datetime | None], *,
                   admin: bool = False) -> None:
    """Print the lines under "Sift is serving on …" (`last_success`: a source's last good
    sync, read from the database off the event loop)."""
    names = [s.name for s in settings.resolved_sources]
    last = {name: await asyncio.to_thread(last_success, name) for name in names}
    print(f"  {startup_line(settings, llm)}", flush=True)
    for line in surface_lines(settings, last, admin=admin):
        print(f"  {line}", flush=True)
