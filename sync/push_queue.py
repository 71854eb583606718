"""Pushed changes synced in the background: coalesced per source, one sync at a time."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from rag.errors import SyncError
from sync.connectors.base import fetcher
from sync.lock import SyncBusy
from sync.report import SyncSummary
from sync.runner import SyncRunner

log = logging.getLogger(__name__)


@dataclass
class _Backlog:
    """What a source's pushes asked for and no sync has started on yet."""

    ids: set[str] = field(default_factory=set)
    resync: bool = False
    task: asyncio.Task[None] | None = None

    def take(self) -> tuple[list[str], bool]:
        ids, resync = sorted(self.ids), self.resync
        self.ids, self.resync = set(), False
        return ids, resync

    def put_back(self, ids: Iterable[str], resync: bool) -> None:
        self.ids.update(ids)
        self.resync |= resync


class PushSyncs:
    """One worker per source drains its backlog: ids pushed while a sync runs wait and are
    merged, so a flood of notifications about one document costs one more sync, not one
    each. The syncs go through the runner, under the same locks as the scheduled runs."""

    def __init__(self, runner: SyncRunner, *, gather_s: float = 0.2,
                 busy_retry_s: float = 5.0, busy_attempts: int = 12) -> None:
        self.runner = runner
        self.gather_s = gather_s  # a burst of notifications lands in one sync
        self.busy_retry_s = busy_retry_s  # another process holds the source's lock
        self.busy_attempts = busy_attempts
        self._backlogs: dict[str, _Backlog] = {}

    def submit(self, source: str, doc_ids: Iterable[str], resync: bool = False) -> None:
        backlog = self._backlogs.setdefault(source, _Backlog())
        backlog.put_back(doc_ids, resync)
        if backlog.task is None and (backlog.ids or backlog.resync):
            backlog.task = asyncio.create_task(self._drain(source, backlog),
                                               name=f"pushed sync of {source}")

    async def idle(self) -> None:
        """Wait until every backlog is drained (tests, and a graceful stop)."""
        while tasks := [b.task for b in self._backlogs.values() if b.task is not None]:
            await asyncio.wait(tasks)

    async def stop(self, timeout_s: float = 15.0) -> None:
        """Cancel what runs (its documents stay as they were; the schedule catches up)."""
        tasks = [b.task for b in self._backlogs.values() if b.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def _drain(self, source: str, backlog: _Backlog) -> None:
        busy = 0
        try:
            while backlog.ids or backlog.resync:
                await asyncio.sleep(self.gather_s)
                ids, resync = backlog.take()
                try:
                    await self._sync(source, ids, resync)
                    busy = 0
                except SyncBusy as exc:
                    busy += 1
                    if busy > self.busy_attempts:
                        log.warning("pushed sync of %s given up after %d tries (%s); the "
                                    "scheduled runs will pick the changes up", source, busy,
                                    exc.user_message)
                        continue
                    backlog.put_back(ids, resync)
                    await asyncio.sleep(self.busy_retry_s)
        finally:
            backlog.task = None
            if not (backlog.ids or backlog.resync):
                self._backlogs.pop(source, None)

    async def _sync(self, source: str, ids: list[str], resync: bool) -> None:
        """Named documents through `fetch`; "something changed" (or a connector that cannot
        read by id) through an incremental run. Failures are logged: the schedule retries."""
        targeted = fetcher(self.runner.source(source).connector) is not None
        try:
            if ids and targeted:
                _report(source, f"{len(ids)} named", await self.runner.run_ids(source, ids))
            if resync or (ids and not targeted):
                _report(source, "incremental", await self.runner.run(source))
        except SyncBusy:
            raise
        except SyncError as exc:
            log.error("pushed sync of %s failed: %s", source, exc.user_message or exc)
        except Exception:
            log.exception("pushed sync of %s failed unexpectedly", source)


def _report(source: str, what: str, summary: SyncSummary) -> None:
    c = summary.counts
    log.info("pushed sync of %s (%s): %d added, %d updated, %d deleted, %d unchanged, "
             "%d failed in %.1fs%s", source, what, c.added, c.updated, c.deleted,
             c.unchanged, c.failed, summary.seconds,
             "".join(f"; {e}" for e in summary.errors[:5]))
