"""An in-memory SyncState: per-source document hashes and a sync_runs log, for unit tests."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sync.ports import RunCounts


@dataclass(frozen=True)
class StoredDocument:
    doc_id: str
    content_hash: str
    chunk_count: int
    status: str = "ok"
    error: str = ""
    updated_at: datetime | None = None
    restricted: bool = False
    warning: str = ""


@dataclass
class StoredRun:
    run_id: int
    source: str
    full: bool
    started_at: datetime
    status: str = "running"
    counts: RunCounts = field(default_factory=RunCounts)
    errors: tuple[str, ...] = ()
    cursor: str | None = None


class MemorySyncState:
    """Thread-safe because the job calls it from worker threads, as it does the real one."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, StoredDocument]] = {}
        self.runs: list[StoredRun] = []
        self.writes = 0  # document records and forgets: "nothing written" is checkable
        self._lock = threading.Lock()

    def documents(self, source: str) -> Mapping[str, StoredDocument]:
        with self._lock:
            return dict(self.docs.get(source, {}))

    def document(self, source: str, doc_id: str) -> StoredDocument | None:
        with self._lock:
            return self.docs.get(source, {}).get(doc_id)

    def has_documents(self, source: str) -> bool:
        with self._lock:
            return bool(self.docs.get(source))

    def document_ids(self, source: str, *, after: str = "", limit: int = 5000) -> list[str]:
        with self._lock:
            return sorted(d for d in self.docs.get(source, {}) if d > after)[:limit]

    def record_document(self, source: str, doc_id: str, *, content_hash: str,
                        chunk_count: int, updated_at: datetime | None, status: str = "ok",
                        error: str = "", restricted: bool = False, warning: str = "") -> None:
        with self._lock:
            self.writes += 1
            self.docs.setdefault(source, {})[doc_id] = StoredDocument(
                doc_id, content_hash, chunk_count, status, error, updated_at, restricted,
                warning)

    def forget_document(self, source: str, doc_id: str) -> None:
        with self._lock:
            self.writes += 1
            self.docs.get(source, {}).pop(doc_id, None)

    def forget_source(self, source: str) -> None:
        with self._lock:
            self.writes += 1
            self.docs.pop(source, None)

    def synced_sources(self) -> set[str]:
        with self._lock:
            return {s for s, docs in self.docs.items() if docs} | {r.source for r in self.runs}

    def start_run(self, source: str, *, full: bool) -> int:
        with self._lock:
            run = StoredRun(len(self.runs) + 1, source, full, datetime.now(UTC))
            self.runs.append(run)
            return run.run_id

    def finish_run(self, run_id: int, counts: RunCounts, errors: Sequence[str], *,
                   status: str, cursor: str | None = None) -> None:
        with self._lock:
            run = self.runs[run_id - 1]
            run.status, run.counts, run.errors = status, counts, tuple(errors)
            run.cursor = cursor

    def last_success(self, source: str) -> datetime | None:
        with self._lock:
            done = [r.started_at for r in self.runs if r.source == source and r.status == "ok"]
            return max(done) if done else None

    def last_cursor(self, source: str) -> str | None:
        with self._lock:
            done = [r for r in self.runs if r.source == source and r.status == "ok"]
            return done[-1].cursor if done else None

    def last_started(self, source: str, *, full: bool = False) -> datetime | None:
        with self._lock:
            return max((r.started_at for r in self.runs
                        if r.source == source and (r.full or not full)), default=None)
