"""Runs syncs of the configured sources, one run per source at a time (in and across processes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from rag.errors import SyncError
from rag.ports import Embedder
from sync.connectors.base import Connector
from sync.interrupt import StopRequest
from sync.job import JobConfig, SyncJob
from sync.lock import SourceLock, SyncBusy
from sync.ports import ChunkIndex, SyncObserver, SyncState
from sync.prune import prune, unconfigured
from sync.report import Progress, SyncSummary


@dataclass(frozen=True)
class SyncSource:
    name: str
    connector: Connector


class SharedLock(Protocol):
    """A lock across machines (replicas sharing one database); acquire raises SyncBusy."""

    def acquire(self) -> None: ...

    def release(self) -> None: ...


class SyncRunner:
    """Scheduled passes of one source queue behind each other in this process; a run from
    another process (`sift sync` beside `sift serve`) finds the file lock taken and says so,
    and a replica on another machine finds the shared lock (`shared_lock`) taken."""

    def __init__(self, sources: Sequence[SyncSource], index: ChunkIndex, embedder: Embedder,
                 state: SyncState, lock_dir: Path, config: JobConfig | None = None, *,
                 shared_lock: Callable[[str], SharedLock] | None = None,
                 stop: StopRequest | None = None,
                 observer: SyncObserver | None = None,
                 builtin: Sequence[SyncSource] = ()) -> None:
        self.stop = stop or StopRequest()
        self.observer = observer
        self._sources = {s.name: s for s in sources}
        # Sources Sift keeps itself (approved answers): synced by id, never pruned as
        # unconfigured, and not among the configured names people are told of.
        self._builtin = {s.name: s for s in builtin}
        self.index = index
        self.embedder = embedder
        self.state = state
        self.lock_dir = lock_dir
        self.config = config or JobConfig()
        self._queues: dict[str, asyncio.Lock] = {}
        self._shared = shared_lock

    @property
    def names(self) -> list[str]:
        return list(self._sources)

    def source(self, name: str) -> SyncSource:
        try:
            return self._sources.get(name) or self._builtin[name]
        except KeyError:
            known = ", ".join(self._sources) or "none"
            raise SyncError(f"unknown source {name!r}",
                            user_message=f"There is no source named '{name}'; configured "
                            f"sources: {known}.") from None

    async def _not_done_yet(self, name: str, full: bool, due: datetime | None) -> None:
        # Replicas (and one machine's workers) tick together, but a short run can end before
        # a slower replica's tick takes the lock: the lock alone would let that replica run
        # the same tick again.
        # A full run covers an incremental one, not the other way round.
        if due is None:
            return
        started = await asyncio.to_thread(self.state.last_started, name, full=full)
        if started is not None and started >= due:
            raise SyncBusy(f"{name}: a run started at {started.isoformat()} already covers "
                           f"the tick due at {due.isoformat()}",
                           user_message=f"Another Sift replica already ran this scheduled "
                           f"sync of '{name}'; this one skips it.")

    async def prune_unconfigured(self, *, dry_run: bool = False) -> dict[str, int]:
        """Remove what sources no longer configured left in the index (the sample, once a
        person configures their own); chunks per source removed, or that would be."""
        found = await unconfigured(self.index, self.state, {*self._sources, *self._builtin})
        if dry_run:
            return found
        return {name: await prune(self.index, self.state, name) for name in found}

    async def run(self, name: str, *, full: bool = False, dry_run: bool = False,
                  progress: Progress | None = None, due: datetime | None = None) -> SyncSummary:
        """One run of a source. `due`: the schedule tick this run is for; when another
        replica's run of the source already started at or after it, this one skips."""
        job = self._job(name, progress)
        if dry_run:  # reads only: no need to wait for, or block, a real run
            return await job.run(full=full, dry_run=True)
        async with self._locked(name, full, due):
            try:
                summary = await job.run(full=full)
            except Exception:
                if self.observer is not None:
                    self.observer.failed(name, full)
                raise
        if self.observer is not None:
            self.observer.finished(summary)
        return summary

    async def run_ids(self, name: str, doc_ids: Sequence[str]) -> SyncSummary:
        """Sync only the named documents (a push), under the same locks as a whole run."""
        job = self._job(name, None)
        async with self._locked(name):
            return await job.run_ids(doc_ids)

    def _job(self, name: str, progress: Progress | None) -> SyncJob:
        source = self.source(name)
        self.stop.check(name)  # interrupted before this source began: no run to record
        return SyncJob(name, source.connector, self.index, self.embedder, self.state,
                       self.config, progress, self.stop)

    @asynccontextmanager
    async def _locked(self, name: str, full: bool = False,
                      due: datetime | None = None) -> AsyncIterator[None]:
        """This process's queue, then the file lock, then (replicas) the shared lease."""
        async with self._queues.setdefault(name, asyncio.Lock()):
            with SourceLock(self.lock_dir, name):
                shared = self._shared(name) if self._shared else None
                if shared is None:  # one machine: its file lock is the only lock
                    await self._not_done_yet(name, full, due)  # `sift serve` workers
                    yield
                    return
                await asyncio.to_thread(shared.acquire)
                try:
                    await self._not_done_yet(name, full, due)
                    yield
                finally:
                    await asyncio.to_thread(shared.release)
