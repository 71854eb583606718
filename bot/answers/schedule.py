"""The answers loop's own timetable in `sift serve`: owners' reminders and the weekly digest,
each on its cron, one replica at a time (a PostgreSQL lease; SQLite is one machine)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from storage.db import Database
from storage.leases import Lease, LeaseTaken
from sync.schedule import crontab

log = logging.getLogger(__name__)


def next_time(cron: str, now: datetime) -> datetime:
    """The first time the 5-field `cron` names after `now` (an aware datetime)."""
    trigger = crontab(cron, timezone=now.tzinfo)
    found = trigger.get_next_fire_time(None, now)
    if found <= now:  # the same minute: the next one
        found = trigger.get_next_fire_time(found, found)
    return found


async def on_schedule(cron: str, job: Callable[[], Awaitable[object]], what: str,
                      db: Database, *, at_start: bool = False) -> None:
    """Run `job` at each time of `cron` until cancelled; a failed run is logged, and the next
    time tries again."""
    if at_start:
        await _once(job, what, db)
    while True:
        now = datetime.now().astimezone()
        await asyncio.sleep(max(0.0, (next_time(cron, now) - now).total_seconds()))
        await _once(job, what, db)


async def _once(job: Callable[[], Awaitable[object]], what: str, db: Database) -> None:
    try:
        if db.dialect != "postgresql":
            await job()
            return
        lease = Lease(db, f"answers:{what}")
        try:
            await asyncio.to_thread(lease.acquire)
        except LeaseTaken:
            log.info("%s: another replica is doing it", what)
            return
        try:
            await job()
        finally:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(lease.release)
    except Exception:
        log.exception("%s failed; the next scheduled time tries again", what)
