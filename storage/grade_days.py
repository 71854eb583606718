"""Per-document, per-day tallies of graded retrievals: the learned prior's evidence, kept as
answers are recorded."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select
from sqlalchemy.sql.dml import Insert

from storage.models import DocumentGradeDay, Interaction, InteractionSource, table
from storage.shapes import CandidateLike
from storage.upsert import insert_for

# The graders whose grades are evidence: rag.prior.EVIDENCE_SOURCES, spelt out here because
# storage imports nothing of rag (the composition root passes rag's set; this is the default
# and what the migration counts with).
EVIDENCE_GRADERS = ("llm", "cache")
# Kept at its default by the migration's backfill: it cannot read settings.
DEFAULT_THRESHOLD = 0.5

_days = table(DocumentGradeDay)
# Built once, values as parameters: the learned prior reads it for a question's documents.
_READ = (select(_days.c.doc_id, _days.c.graded, _days.c.relevant, _days.c.first_at,
                _days.c.last_at)
         .where(_days.c.doc_id.in_(bindparam("docs", expanding=True)),
                _days.c.day >= bindparam("since")))


def utc_day(at: datetime) -> date:
    """The UTC calendar day of a timestamp (a naive one is taken to be UTC already)."""
    return (at if at.tzinfo is None else at.astimezone(UTC)).date()


def best_evidence(candidates: Iterable[CandidateLike],
                  sources: Collection[str]) -> dict[str, float]:
    """Each document's best grade among the candidates that count as evidence: two chunks of
    one document in one answer are one graded retrieval."""
    best: dict[str, float] = {}
    for candidate in candidates:
        grade = candidate.grade
        if grade is None or grade.score is None or str(grade.source) not in sources:
            continue
        doc = candidate.chunk.doc_id
        best[doc] = max(best.get(doc, grade.score), grade.score)
    return best


def grade_day_rows(best: dict[str, float], threshold: float,
                   now: datetime) -> list[dict[str, Any]]:
    """Rows for the upsert, sorted by document (the order rows are locked in)."""
    return [{"doc_id": doc, "day": utc_day(now), "graded": 1,
             "relevant": int(best[doc] >= threshold), "first_at": now, "last_at": now}
            for doc in sorted(best)]


@lru_cache(maxsize=4)
def add_to_days(dialect: str) -> Insert:
    """The upsert that adds `grade_day_rows` to their days, built once per dialect.

    The counts are added, and the day's span widened, by the database under its row lock:
    answers recorded by several processes (or with slightly different clocks) commit in any
    order, so the newest row is not always the latest time.
    """
    stmt = insert_for(dialect, _days)
    new = stmt.excluded
    # SQLite's two-argument min() and max() are PostgreSQL's least() and greatest().
    least, greatest = (func.min, func.max) if dialect == "sqlite" else (func.least,
                                                                         func.greatest)
    result: Insert = stmt.on_conflict_do_update(
        index_elements=[_days.c.doc_id, _days.c.day],
        set_={"graded": _days.c.graded + new.graded,
              "relevant": _days.c.relevant + new.relevant,
              "first_at": least(_days.c.first_at, new.first_at),
              "last_at": greatest(_days.c.last_at, new.last_at)})
    return result


def read_tallies(connection: Any, doc_ids: Sequence[str],
                 since: datetime) -> list[tuple[str, int, int, datetime]]:
    """(document, graded, relevant, the day's midpoint) for every day from `since`'s on."""
    rows = connection.execute(_READ, {"docs": list(doc_ids), "since": utc_day(since)})
    return [(doc, int(graded), int(relevant), first + (last - first) / 2)
            for doc, graded, relevant, first, last in rows]


def rebuild(connection: Connection, *, threshold: float = DEFAULT_THRESHOLD,
            sources: Collection[str] = EVIDENCE_GRADERS, size: int = 5000) -> int:
    """Recount every tally from the stored retrievals (the migration that added them, and data
    loaded around the repositories); returns the graded retrievals counted."""
    connection.execute(delete(_days))
    s, i = InteractionSource, Interaction
    per_answer = (select(s.doc_id, func.max(s.grade_score), i.created_at)
                  .join(i, i.id == s.interaction_id)
                  .where(s.grade_score.is_not(None), s.grade_source.in_(list(sources)))
                  .group_by(s.interaction_id, s.doc_id, i.created_at))
    # Summed here rather than by the database: its "date of a timestamp" follows the session's
    # time zone on PostgreSQL, and these days are UTC ones, as recording writes them.
    tallies: dict[tuple[str, date], list[Any]] = {}
    counted = 0
    for doc, best, at in connection.execute(per_answer.execution_options(yield_per=size)):
        tally = tallies.setdefault((doc, utc_day(at)), [0, 0, at, at])
        tally[0] += 1
        tally[1] += int(best is not None and best >= threshold)  # never None: filtered
        tally[2], tally[3] = min(tally[2], at), max(tally[3], at)
        counted += 1
    rows = [{"doc_id": doc, "day": day, "graded": graded, "relevant": relevant,
             "first_at": first, "last_at": last}
            for (doc, day), (graded, relevant, first, last) in sorted(tallies.items())]
    for start in range(0, len(rows), size):
        connection.execute(insert(_days), rows[start:start + size])
    return counted
