"""The sync schedule inside `sift serve`: frequent incremental pulls, a nightly full pass."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from rag.errors import ConfigError, SyncError
from sync.lock import SyncBusy
from sync.runner import SyncRunner

log = logging.getLogger(__name__)
# Interval ticks count from one fixed instant, so replicas started at different times tick
# together (and the lease lets one of them run each tick).
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SourceSchedule:
    """When one source syncs: `cron` (if set) or every `interval_minutes`, plus `full_cron`."""

    name: str
    interval_minutes: float | None = 15.0
    cron: str = ""
    full_cron: str = "0 3 * * *"


_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab's 0..6 (and 7 = sun)


def _day_names(field: str) -> str:
    """A crontab day-of-week field in day names: APScheduler 3 reads the numbers with 0 as
    Monday, where every crontab means Sunday, so "1-5" would run Tuesday to Saturday."""
    if field == "*":
        return field
    names: list[str] = []
    for item in field.split(","):
        body, _, step = item.partition("/")
        if body == "*":
            low, high = 0, 6
        elif re.fullmatch(r"\d+-\d+", body):
            low, high = (int(n) for n in body.split("-"))
        elif body.isdigit():
            low = high = int(body)
            high = 6 if step else high  # "1/2": from Monday, every other day
        else:  # names already: APScheduler reads those as crontab does
            names.append(item)
            continue
        if not (0 <= low <= 7 and 0 <= high <= 7):
            return field  # out of range: APScheduler's own error names it
        names.extend(_DAYS[d % 7] for d in range(low, high + 1, int(step or 1)))
    return ",".join(dict.fromkeys(names))


def crontab(expression: str, timezone: tzinfo | None = None) -> CronTrigger:
    """A 5-field cron expression read as crontab reads it (day 0 and 7 are Sunday); raises
    ValueError naming what is wrong."""
    fields = expression.split()
    if len(fields) == 5:
        fields[4] = _day_names(fields[4])
    return CronTrigger.from_crontab(" ".join(fields), timezone=timezone)


def _cron(expression: str, name: str) -> CronTrigger:
    try:
        return crontab(expression)
    except ValueError as exc:
        raise ConfigError(f"bad cron {expression!r} for source {name}: {exc}",
                          user_message=f"The schedule '{expression}' of source '{name}' is not "
                          "a valid 5-field cron expression (e.g. '*/15 * * * *').") from exc


def _incremental(schedule: SourceSchedule) -> BaseTrigger | None:
    if schedule.cron:
        return _cron(schedule.cron, schedule.name)
    if schedule.interval_minutes:
        return IntervalTrigger(minutes=schedule.interval_minutes, start_date=EPOCH)
    return None


def last_due(trigger: BaseTrigger, now: datetime, within_s: float) -> datetime | None:
    """The latest tick of `trigger` at or before `now`, looking back at most `within_s`."""
    found = None
    tick = trigger.get_next_fire_time(None, now - timedelta(seconds=within_s))
    while tick is not None and tick <= now:
        found = tick
        tick = trigger.get_next_fire_time(tick, tick + timedelta(microseconds=1))
    return found


async def scheduled_sync(runner: SyncRunner, name: str, full: bool,
                         due: datetime | None = None) -> None:
    """One scheduled run; its failure is logged and never reaches the scheduler or the bot."""
    kind = "full" if full else "incremental"
    try:
        summary = await runner.run(name, full=full, due=due)
    except SyncBusy as exc:
        log.info("%s sync of %s skipped: %s", kind, name, exc.user_message)
    except SyncError as exc:
        log.error("%s sync of %s failed: %s", kind, name, exc.user_message)
    except Exception:
        log.exception("%s sync of %s failed unexpectedly", kind, name)
    else:
        c = summary.counts
        log.info("%s sync of %s: %d added, %d updated, %d deleted, %d unchanged, %d failed, "
                 "%d chunks in %.1fs", kind, name, c.added, c.updated, c.deleted, c.unchanged,
                 c.failed, c.chunks_written, summary.seconds)


class SyncScheduler:
    """Per source: incremental and full jobs (never two of one at once, missed runs coalesced
    into one), plus an immediate full pass in the background at start-up."""

    def __init__(self, runner: SyncRunner, schedules: Sequence[SourceSchedule], *,
                 misfire_grace_s: float = 300.0, sync_on_start: bool = True,
                 prune_on_start: bool = True,
                 configured: Callable[[], set[str]] | None = None) -> None:
        self.runner = runner
        # The sources the configuration names now (a file read when it changed): a source a
        # newer sift.toml removed is not synced again by this server, which started before.
        self._configured = configured
        self._prune_on_start = prune_on_start
        self.scheduler = AsyncIOScheduler()
        self._grace_s = misfire_grace_s
        self._running: set[asyncio.Task[None]] = set()
        options = {"max_instances": 1, "coalesce": True,
                   "misfire_grace_time": int(misfire_grace_s), "replace_existing": True}
        for schedule in schedules:
            name = schedule.name
            trigger = _incremental(schedule)
            if trigger is not None:
                self.scheduler.add_job(self._sync, trigger, args=[name, False, trigger],
                                       id=f"sync:{name}", name=f"incremental sync of {name}",
                                       **options)
            if schedule.full_cron:
                full = _cron(schedule.full_cron, name)
                self.scheduler.add_job(self._sync, full, args=[name, True, full],
                                       id=f"sync-full:{name}",
                                       name=f"full sync of {name}", **options)
            if sync_on_start:
                self.scheduler.add_job(self._sync, "date", args=[name, True],
                                       id=f"sync-start:{name}", name=f"start-up sync of {name}",
                                       **options)

    async def _sync(self, name: str, full: bool, trigger: BaseTrigger | None = None) -> None:
        """A run; a scheduled one (`trigger`) is for its latest tick, run once per tick."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        due = None if trigger is None else last_due(
            trigger, datetime.now(UTC), self._grace_s + 1)
        try:
            if not await self._still_configured(name):
                return
            await scheduled_sync(self.runner, name, full, due)
        except asyncio.CancelledError:
            # Only `stop` cancels a sync, and the job has logged it; raised on, the scheduler
            # would log a traceback as an error.
            return
        finally:
            if task is not None:
                self._running.discard(task)

    async def _still_configured(self, name: str) -> bool:
        """False, with its jobs removed and a warning, for a source sift.toml no longer names."""
        if self._configured is None:
            return True
        if name in await asyncio.to_thread(self._configured):
            return True
        for job in self.scheduler.get_jobs():
            if job.args and job.args[0] == name:
                job.remove()
        log.warning("source %r is no longer in sift.toml (changed after this server started): "
                    "this server stops syncing it, and `sift sync` removes what it left in "
                    "the index; restart sift serve to follow the rest of the new "
                    "configuration", name)
        return False

    def start(self) -> None:
        if self._prune_on_start:
            self.scheduler.add_job(self._prune, "date", id="prune-unconfigured",
                                   name="removal of sources no longer configured",
                                   replace_existing=True, misfire_grace_time=None)
        self.scheduler.start()

    async def _prune(self) -> None:
        """A changed sift.toml takes effect in `sift serve` as in `sift sync`: what sources
        no longer configured left in the index goes, or answers would keep citing it."""
        try:
            removed = await self.runner.prune_unconfigured()
        except asyncio.CancelledError:
            # `stop` came first (a server stopped right after starting); the next start
            # prunes. Raised on, the scheduler would log a traceback as an error.
            log.info("removing the sources no longer configured: stopped; the next start "
                     "does it")
            return
        except Exception:
            log.exception("removing the sources no longer configured failed")
            return
        for name, chunks in removed.items():
            log.info("Removed source '%s' (no longer configured): %d chunks", name, chunks)

    def run_now(self, name: str) -> None:
        """An incremental run of one source now (the admin console's "sync now"); a run of
        the same source already under way makes this one skip, as a scheduled run would."""
        self.runner.source(name)  # unknown name: SyncError naming it
        self.scheduler.add_job(self._sync, "date", args=[name, False], id=f"sync-now:{name}",
                               name=f"requested sync of {name}", replace_existing=True,
                               misfire_grace_time=None)

    def next_run(self, name: str) -> datetime | None:
        """When the next scheduled pass of this source starts; None when nothing is due."""
        found: list[datetime | None] = [
            getattr(job, "next_run_time", None) for job in self.scheduler.get_jobs()
            if job.args and job.args[0] == name]  # a job added before start() has none
        times = [t for t in found if t is not None]
        return min(times, default=None)

    async def stop(self, timeout_s: float = 15.0) -> None:
        """Stop scheduling and cancel running syncs; wait for them to record their runs."""
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)  # cancels the running jobs' tasks
        running = set(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=timeout_s)
