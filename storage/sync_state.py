"""Sync state: per-source document hashes and the log of sync runs (sync's `SyncState`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Select, delete, func, select, update

from storage.columns import utc_now
from storage.db import Database
from storage.errors import UnknownSyncRun
from storage.models import SourceDocument, SyncRun, table
from storage.shapes import RunCountsLike
from storage.upsert import upsert

MAX_ERRORS = 100  # a run with thousands of failures keeps the first ones; the log has the rest
MAX_ERROR_CHARS = 1000
SUCCESS = "ok"
RUNNING = "running"  # a run started and not finished (or killed before it could say so)


@dataclass(frozen=True, slots=True)  # a sync holds one per document: 100,000 of them
class DocumentRecord:
    doc_id: str
    content_hash: str
    chunk_count: int
    status: str
    updated_at: datetime | None
    last_synced: datetime
    error: str = ""
    restricted: bool = False
    warning: str = ""


class SyncStateRepository:
    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def documents(self, source: str) -> dict[str, DocumentRecord]:
        with self._db.read() as session:
            return {row[0]: DocumentRecord(*row) for row in session.execute(
                _records(source))}

    def document(self, source: str, doc_id: str) -> DocumentRecord | None:
        with self._db.read() as session:
            row = session.execute(_records(source).where(
                SourceDocument.doc_id == doc_id)).first()
        return None if row is None else DocumentRecord(*row)

    def has_documents(self, source: str) -> bool:
        query = select(SourceDocument.doc_id).where(SourceDocument.source == source).limit(1)
        with self._db.read() as session:
            return session.scalar(query) is not None

    def document_ids(self, source: str, *, after: str = "", limit: int = 5000) -> list[str]:
        # By key, not OFFSET: each page is a range read of the primary key's index, and a
        # page stays right when the caller forgets documents between pages.
        d = SourceDocument
        query = (select(d.doc_id).where(d.source == source, d.doc_id > after)
                 .order_by(d.doc_id).limit(limit))
        with self._db.read() as session:
            return list(session.scalars(query))

    def record_document(self, source: str, doc_id: str, *, content_hash: str,
                        chunk_count: int, updated_at: datetime | None, status: str = "ok",
                        error: str = "", restricted: bool = False, warning: str = "") -> None:
        row = {"source": source, "doc_id": doc_id, "content_hash": content_hash,
               "chunk_count": chunk_count, "updated_at": updated_at,
               "last_synced": self._clock(), "status": status,
               "error": error[:MAX_ERROR_CHARS], "restricted": restricted,
               "warning": warning[:MAX_ERROR_CHARS]}
        changed = ("content_hash", "chunk_count", "updated_at", "last_synced", "status", "error",
                   "restricted", "warning")
        with self._db.write() as session:
            session.execute(upsert(self._db.dialect, table(SourceDocument),
                                   keys=("source", "doc_id"), replace=changed), [row])

    def forget_document(self, source: str, doc_id: str) -> None:
        with self._db.write() as session:
            docs = table(SourceDocument)
            session.execute(delete(docs).where(docs.c.source == source, docs.c.doc_id == doc_id))

    def forget_source(self, source: str) -> None:
        """Drop a removed source's document records, so that re-adding it reads everything."""
        with self._db.write() as session:
            docs = table(SourceDocument)
            session.execute(delete(docs).where(docs.c.source == source))

    def synced_sources(self) -> set[str]:
        with self._db.read() as session:
            return set(session.scalars(select(SourceDocument.source).distinct())) | set(
                session.scalars(select(SyncRun.source).distinct()))

    def start_run(self, source: str, *, full: bool) -> int:
        """A new run; runs of the source still `running` were killed (the caller holds the
        source's lock), so they become `abandoned` instead of running forever."""
        with self._db.write() as session:
            session.execute(update(SyncRun).where(
                SyncRun.source == source, SyncRun.status == RUNNING).values(
                status="abandoned", finished_at=self._clock()))
            run = SyncRun(source=source, full=full, status=RUNNING,
                          started_at=self._clock(), errors=[])
            session.add(run)
            session.flush()
            return run.id

    def finish_run(self, run_id: int, counts: RunCountsLike, errors: Sequence[str], *,
                   status: str, cursor: str | None = None) -> None:
        values: dict[str, Any] = {
            "status": status, "finished_at": self._clock(), "added": counts.added,
            "updated": counts.updated, "deleted": counts.deleted,
            "unchanged": counts.unchanged, "failed": counts.failed,
            "chunks_written": counts.chunks_written,
            "errors": [e[:MAX_ERROR_CHARS] for e in errors[:MAX_ERRORS]], "cursor": cursor,
        }
        with self._db.write() as session:
            result = session.execute(update(SyncRun).where(SyncRun.id == run_id).values(values))
            if cast(CursorResult[Any], result).rowcount == 0:
                raise UnknownSyncRun(run_id)

    def last_success(self, source: str) -> datetime | None:
        """Start of the source's last run that finished with status "ok"."""
        query = select(func.max(SyncRun.started_at)).where(SyncRun.source == source,
                                                           SyncRun.status == SUCCESS)
        with self._db.read() as session:
            return session.scalar(query)

    def last_cursor(self, source: str) -> str | None:
        """The change cursor of the source's latest run that finished with status "ok"."""
        query = (select(SyncRun.cursor).where(SyncRun.source == source,
                                              SyncRun.status == SUCCESS)
                 .order_by(SyncRun.started_at.desc(), SyncRun.id.desc()).limit(1))
        with self._db.read() as session:
            return session.scalar(query)

    def last_started(self, source: str, *, full: bool = False) -> datetime | None:
        query = select(func.max(SyncRun.started_at)).where(SyncRun.source == source)
        if full:
            query = query.where(SyncRun.full.is_(True))
        with self._db.read() as session:
            return session.scalar(query)

    def running(self) -> list[str]:
        """Sources with a run not finished yet (or killed before it could say so)."""
        return self._with_open_run()

    def first_syncs_running(self) -> list[str]:
        """Sources whose first sync is under way: a run not finished and none ever succeeded
        (the index holds only part of them, if any)."""
        succeeded = select(SyncRun.source).where(SyncRun.status == SUCCESS)
        return self._with_open_run(SyncRun.source.not_in(succeeded))

    def _with_open_run(self, *also: ColumnElement[bool]) -> list[str]:
        query = (select(SyncRun.source).where(SyncRun.status == RUNNING, *also).distinct()
                 .order_by(SyncRun.source))
        with self._db.read() as session:
            return list(session.scalars(query))

    def runs(self, source: str | None = None, limit: int = 20) -> list[SyncRun]:
        query = select(SyncRun).order_by(SyncRun.id.desc()).limit(limit)
        if source is not None:
            query = query.where(SyncRun.source == source)
        with self._db.read() as session:
            return list(session.scalars(query))


def _records(source: str) -> Select[str, str, int, str, datetime | None, datetime, str, bool,
                                   str]:
    # Columns, not entities: no ORM object (nor identity map) per document of a big source.
    d = SourceDocument
    return select(d.doc_id, d.content_hash, d.chunk_count, d.status, d.updated_at,
                  d.last_synced, d.error, d.restricted, d.warning).where(d.source == source)
