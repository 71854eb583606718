"""Document overrides (pin, boost, demote, hide) and the history behind the learned prior."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, func, select

from storage.columns import utc_now
from storage.db import Database
from storage.errors import StorageError
from storage.grade_days import read_tallies
from storage.models import (
    DocumentOverride,
    DocumentStats,
    DocumentVote,
    table,
)
from storage.upsert import upsert

KINDS = ("pin", "boost", "demote", "hide")

_overrides = table(DocumentOverride)
# Built once, values as parameters: every question reads both.
_HIDDEN = select(_overrides.c.doc_id).where(_overrides.c.kind == "hide")
_votes = table(DocumentVote)
_VOTES = select(_votes.c.doc_id, _votes.c.user_id, _votes.c.vote, _votes.c.updated_at).where(
    _votes.c.doc_id.in_(bindparam("docs", expanding=True)),
    _votes.c.updated_at >= bindparam("since"))
_FOR_DOCUMENTS = select(_overrides.c.doc_id, _overrides.c.kind, _overrides.c.factor,
                        _overrides.c.note, _overrides.c.set_by, _overrides.c.updated_at).where(
    _overrides.c.doc_id.in_(bindparam("docs", expanding=True)))


@dataclass(frozen=True)
class OverrideRow:
    doc_id: str
    kind: str
    factor: float | None
    note: str
    set_by: str
    updated_at: datetime


@dataclass
class DocHistory:
    """One document's recent history: its graded retrievals, a day's in one tally (how many,
    how many relevant, when: halfway between the day's first and last), and the current votes
    on answers that cited it (who, +1/-1, when)."""

    grades: list[tuple[int, int, datetime]] = field(default_factory=list)
    votes: list[tuple[str, int, datetime]] = field(default_factory=list)


class OverrideRepository:
    """Admin overrides, one per document; setting a new one replaces the old."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def set(self, doc_id: str, kind: str, *, factor: float | None = None, note: str = "",
            set_by: str = "") -> None:
        if kind not in KINDS:
            raise StorageError(f"An override is one of {', '.join(KINDS)}, not {kind!r}.")
        if not doc_id.strip():
            raise StorageError("An override needs a document id.")
        row = {"doc_id": doc_id, "kind": kind, "factor": factor, "note": note,
               "set_by": set_by, "updated_at": self._clock()}
        with self._db.write() as session:
            session.execute(upsert(self._db.dialect, table(DocumentOverride), keys=("doc_id",),
                                   replace=("kind", "factor", "note", "set_by", "updated_at")),
                            [row])

    def reset(self, doc_id: str) -> bool:
        """Remove the document's override; False when it had none."""
        statement = table(DocumentOverride).delete().where(DocumentOverride.doc_id == doc_id)
        with self._db.write() as session:
            return cast(CursorResult[Any], session.execute(statement)).rowcount > 0

    def all(self, kind: str | None = None) -> list[OverrideRow]:
        query = select(DocumentOverride).order_by(DocumentOverride.kind, DocumentOverride.doc_id)
        if kind is not None:
            query = query.where(DocumentOverride.kind == kind)
        with self._db.read() as session:
            return [OverrideRow(o.doc_id, o.kind, o.factor, o.note, o.set_by, o.updated_at)
                    for o in session.scalars(query)]

    def hidden(self) -> list[str]:
        with self._db.read() as session:
            return sorted(session.scalars(_HIDDEN))

    def for_documents(self, doc_ids: Sequence[str]) -> dict[str, OverrideRow]:
        with self._db.read() as session:
            return {o.doc_id: OverrideRow(o.doc_id, o.kind, o.factor, o.note, o.set_by,
                                          o.updated_at)
                    for o in session.execute(_FOR_DOCUMENTS, {"docs": list(doc_ids)})}


class HistoryOfDocuments:
    """Reads the evidence the learned prior weighs, for the documents of one question."""

    def __init__(self, db: Database, *, window_days: float = 365.0,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._window = timedelta(days=window_days)  # older evidence has decayed to ~nothing
        self._clock = clock

    def base_rate(self) -> float | None:
        """The share of graded retrievals that were relevant, over all documents."""
        query = select(func.sum(DocumentStats.graded_relevant), func.sum(DocumentStats.graded))
        with self._db.read() as session:
            relevant, graded = session.execute(query).one()
        return relevant / graded if graded else None

    def for_documents(self, doc_ids: Sequence[str]) -> dict[str, DocHistory]:
        found: dict[str, DocHistory] = {d: DocHistory() for d in doc_ids}
        if not doc_ids:
            return found
        since = self._clock() - self._window
        with self._db.read() as session:
            # Both come from tables kept as answers and votes are recorded, one row per day of
            # graded retrievals and one per vote: reading them from every answer that retrieved
            # or cited the document read its whole history on every refresh, for ever more
            # time as it grew. Weighing a day's retrievals at its midpoint moves the prior by
            # less than 0.4% of a day's weight at a 90-day half-life.
            for doc, graded, relevant, when in read_tallies(session, doc_ids, since):
                found[doc].grades.append((graded, relevant, when))
            for doc, user, vote, at in session.execute(_VOTES, {"docs": list(doc_ids),
                                                                "since": since}):
                found[doc].votes.append((user, vote, at))
        return found
