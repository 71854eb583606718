"""Review dates: when each document or approved answer was last verified (its own last change
or its owner's confirmation), and which are due or past their source's review interval."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, select

from storage.columns import utc_now
from storage.db import Database
from storage.models import DocumentReview, DocumentStats, SourceDocument

VERIFIED, DUE, EXPIRED = "verified", "due", "expired"
STATES = (VERIFIED, DUE, EXPIRED)
DUE_WITHIN = timedelta(days=14)  # "due": expires within this; its owner is told then


@dataclass(frozen=True)
class ReviewState:
    doc_id: str
    source: str
    title: str
    url: str
    last_reviewed: datetime | None  # None: no modification time and never confirmed
    review_by: datetime | None  # None with last_reviewed None: overdue already
    state: str  # verified, due, expired
    verified_by: str = ""
    reminded_at: datetime | None = None
    restricted: bool = False  # the public may not read it (the console masks it for viewers)


class DocumentReviews:
    """`intervals`: review days per source name; sources it does not name are never due."""

    def __init__(self, db: Database, intervals: Mapping[str, int],
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._intervals = dict(intervals)
        self._clock = clock

    @property
    def tracked(self) -> tuple[str, ...]:
        return tuple(self._intervals)

    def states(self, doc_ids: Sequence[str] | None = None,
               state: str | None = None) -> list[ReviewState]:
        """The reviewed sources' synced documents (those of `doc_ids` only, when given),
        soonest due first; `state` keeps one of verified, due, expired."""
        if not self._intervals or (doc_ids is not None and not doc_ids):
            return []
        return self._states(doc_ids, state, tracked_only=True)

    def states_of(self, doc_ids: Sequence[str]) -> list[ReviewState]:
        """These documents of any source; one whose source is not reviewed is verified, with
        no review date."""
        return self._states(doc_ids, None, tracked_only=False) if doc_ids else []

    def _states(self, doc_ids: Sequence[str] | None, state: str | None, *,
                tracked_only: bool) -> list[ReviewState]:
        query = (select(SourceDocument.source, SourceDocument.doc_id, SourceDocument.updated_at,
                        SourceDocument.restricted,
                        DocumentReview.verified_at, DocumentReview.verified_by,
                        DocumentReview.reminded_at, DocumentStats.title, DocumentStats.url)
                 .outerjoin(DocumentReview, and_(DocumentReview.doc_id == SourceDocument.doc_id,
                                                 DocumentReview.source == SourceDocument.source))
                 .outerjoin(DocumentStats, DocumentStats.doc_id == SourceDocument.doc_id)
                 .where(SourceDocument.status == "ok"))
        if tracked_only:
            query = query.where(SourceDocument.source.in_(self._intervals))
        if doc_ids is not None:
            query = query.where(SourceDocument.doc_id.in_(list(doc_ids)))
        now = self._clock()
        with self._db.read() as session:
            found = [self._state(row, now) for row in session.execute(query)]
        found.sort(key=lambda r: (r.review_by is not None, r.review_by or now, r.doc_id))
        return [r for r in found if state is None or r.state == state]

    def _state(self, row: Any, now: datetime) -> ReviewState:  # one row of `states`
        verified: datetime | None = row.verified_at
        last = max((d for d in (row.updated_at, verified) if d is not None), default=None)
        days = self._intervals.get(row.source)
        review_by = last + timedelta(days=days) if last and days else None
        if days is None:  # a source nobody reviews is never due
            state = VERIFIED
        else:
            state = EXPIRED if review_by is None or review_by <= now else \
                DUE if review_by - now <= DUE_WITHIN else VERIFIED
        by = (row.verified_by or "") if verified is not None and verified == last else ""
        return ReviewState(row.doc_id, row.source, row.title or row.doc_id, row.url or "",
                           last, review_by, state, by, row.reminded_at, bool(row.restricted))

    def overdue(self, doc_ids: Sequence[str]) -> dict[str, datetime | None]:
        """Of these documents, the ones past their review date, with when each was last
        verified (None: never)."""
        return {r.doc_id: r.last_reviewed for r in self.states(doc_ids, EXPIRED)}

    def keep(self, source: str, doc_id: str, by: str) -> None:
        """Its owner (or an admin) confirmed it is still true: verified from now on."""
        now = self._clock()
        with self._db.write() as session:
            row = session.get(DocumentReview, doc_id)
            if row is None:
                session.add(DocumentReview(doc_id=doc_id, source=source, verified_at=now,
                                           verified_by=by))
            else:
                row.source, row.verified_at, row.verified_by = source, now, by
                row.reminded_at = None

    def to_remind(self) -> list[ReviewState]:
        """Due or expired, and not reminded since they were last verified."""
        return [r for r in self.states() if r.state != VERIFIED and (
            r.reminded_at is None or (r.last_reviewed is not None
            and r.reminded_at < r.last_reviewed))]

    def reminded(self, source: str, doc_id: str) -> None:
        now = self._clock()
        with self._db.write() as session:
            row = session.get(DocumentReview, doc_id)
            if row is None:
                session.add(DocumentReview(doc_id=doc_id, source=source, reminded_at=now))
            else:
                row.reminded_at = now
