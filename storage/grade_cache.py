"""The grade cache: a grade is reused only for the same question, chunk content and grader."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import bindparam, delete, select, update

from storage.columns import utc_now
from storage.db import Database
from storage.models import GradeCacheEntry, table
from storage.shapes import GradeKeyLike, ScoredLike
from storage.upsert import upsert

K = TypeVar("K", bound=GradeKeyLike)

_table = table(GradeCacheEntry)
# Built once, values as parameters: every question looks its candidates up.
_FRESH = select(_table.c.chunk_id, _table.c.content_hash, _table.c.score, _table.c.reason,
                _table.c.model).where(
    _table.c.question_hash == bindparam("qhash"),
    _table.c.grader_version == bindparam("version"),
    _table.c.chunk_id.in_(bindparam("chunks", expanding=True)),
    _table.c.created_at > bindparam("fresh_after"))


@dataclass(frozen=True)
class StoredGrade:
    score: float
    reason: str
    model: str


def _group(keys: Sequence[K]) -> dict[tuple[str, str], list[K]]:
    groups: dict[tuple[str, str], list[K]] = {}
    for key in keys:
        groups.setdefault((key.question_hash, key.grader_version), []).append(key)
    return groups


class GradeCacheRepository:
    """Satisfies rag's `GradeCache`. Entries older than `ttl` never hit; a zero ttl disables."""

    def __init__(self, db: Database, *, ttl: timedelta,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._ttl = ttl
        self._clock = clock

    def get_many(self, keys: Sequence[K]) -> dict[K, StoredGrade]:
        """The fresh grades among `keys`, keyed by the very objects passed in."""
        if not keys or self._ttl <= timedelta(0):
            return {}
        fresh_after = self._clock() - self._ttl
        found: dict[K, StoredGrade] = {}
        with self._db.read() as session:
            for (qhash, version), group in _group(keys).items():
                rows = {(r.chunk_id, r.content_hash): r for r in session.execute(_FRESH, {
                    "qhash": qhash, "version": version, "fresh_after": fresh_after,
                    "chunks": sorted({k.chunk_id for k in group})})}
                # The content hash is part of the key: changed content never matches.
                for key in group:
                    row = rows.get((key.chunk_id, key.content_hash))
                    if row is not None:
                        found[key] = StoredGrade(row.score, row.reason, row.model)
        if found:
            self._count_hits(list(found))
        return found

    def put_many(self, grades: Mapping[K, ScoredLike]) -> None:
        """Store real verdicts; a grade without a score (grader failure) is skipped."""
        if self._ttl <= timedelta(0):
            return
        now = self._clock()
        rows = sorted(
            ({"question_hash": k.question_hash, "chunk_id": k.chunk_id,
              "content_hash": k.content_hash, "grader_version": k.grader_version,
              "score": g.score, "reason": g.reason, "model": g.model, "created_at": now,
              "hits": 0}
             for k, g in grades.items() if g.score is not None),
            key=_row_key)
        if not rows:
            return
        with self._db.write() as session:
            session.execute(upsert(self._db.dialect, _table, keys=_KEY,
                                   replace=("score", "reason", "model", "created_at")), rows)

    def expire(self) -> int:
        """Delete entries past the ttl; returns how many."""
        cutoff = self._clock() - self._ttl
        with self._db.write() as session:
            result: Any = session.execute(delete(_table).where(_table.c.created_at <= cutoff))
            return int(result.rowcount)

    def _count_hits(self, keys: Sequence[GradeKeyLike]) -> None:
        statement = (update(_table).values(hits=_table.c.hits + 1)
                     .where(*(_table.c[name] == bindparam(f"k_{name}") for name in _KEY)))
        params = sorted(({f"k_{name}": getattr(k, name) for name in _KEY} for k in keys),
                        key=lambda p: tuple(p.values()))
        with self._db.write() as session:
            session.connection().execute(statement, params)


_KEY = ("question_hash", "chunk_id", "content_hash", "grader_version")


def _row_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(row[name] for name in _KEY)
