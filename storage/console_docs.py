"""The admin console's documents, sources and content-gap inputs, each query paged."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import exists, func, or_, select

from storage.db import Database
from storage.models import (
    ClosedGap,
    DocumentStats,
    Feedback,
    Interaction,
    InteractionSource,
    SourceDocument,
    SyncRun,
)

DOC_VIEWS = ("low", "down", "never", "all")


@dataclass(frozen=True)
class DocHealth:
    doc_id: str
    title: str
    url: str
    retrieved: int
    graded: int
    average_grade: float | None
    cited: int
    up: int
    down: int
    source: str = ""
    restricted: bool = False  # not public: a viewer sees neither its title nor its link
    model_average: float | None = None  # a model's grades only; None: the heuristic's alone
    synced: bool = True  # False: no source holds it any more (deleted at its source)


@dataclass(frozen=True)
class SourceCounts:
    source: str
    ok: int
    failed: int
    chunks: int
    warned: int = 0  # indexed, with something wrong (a misspelt `access`)


@dataclass(frozen=True)
class FailedDocument:
    """A document that failed (`error`), or was indexed with a `warning`."""

    doc_id: str
    error: str
    last_synced: datetime
    warning: str = ""

    @property
    def failed(self) -> bool:
        return not self.warning or bool(self.error)


@dataclass(frozen=True)
class GapQuestion:
    id: int
    question: str
    created_at: datetime
    unanswered: bool


@dataclass(frozen=True)
class NearDocument:
    doc_id: str
    title: str
    url: str
    score: float


def _health(d: DocumentStats, synced: bool) -> DocHealth:
    return DocHealth(d.doc_id, d.title, d.url, d.retrieved, d.graded,
                     d.grade_score_sum / d.graded if d.graded else None, d.cited,
                     d.thumbs_up, d.thumbs_down, restricted=d.restricted,
                     model_average=d.model_grade_sum / d.model_graded if d.model_graded
                     else None, synced=synced)


def documents(db: Database, view: str, *, threshold: float, min_retrieved: int = 3,
              text: str = "", offset: int = 0, limit: int = 50) -> list[DocHealth]:
    """One page of a health view: low (retrieved often, graded low by a model: the fast mode's
    heuristic grades only count shared words), down (cited and voted down), never (synced,
    never retrieved), all (most retrieved first)."""
    if view == "never":
        return _never(db, text, offset, limit)
    s = DocumentStats
    query = select(s, exists().where(SourceDocument.doc_id == s.doc_id))
    if view == "low":
        query = query.where(s.retrieved >= min_retrieved, s.model_graded > 0,
                            s.model_grade_sum < threshold * s.model_graded)
        query = query.order_by(s.retrieved.desc(), (s.model_grade_sum / s.model_graded),
                               s.doc_id)
    elif view == "down":
        query = query.where(s.thumbs_down > 0).order_by(s.thumbs_down.desc(), s.doc_id)
    else:
        query = query.order_by(s.retrieved.desc(), s.doc_id)
    if text:
        query = query.where(or_(s.title.ilike(f"%{text}%"), s.doc_id.ilike(f"%{text}%")))
    with db.read() as session:
        return [_health(d, bool(synced))
                for d, synced in session.execute(query.offset(offset).limit(limit))]


def _never(db: Database, text: str, offset: int, limit: int) -> list[DocHealth]:
    retrieved = exists().where(DocumentStats.doc_id == SourceDocument.doc_id,
                               DocumentStats.retrieved > 0)
    query = (select(SourceDocument.source, SourceDocument.doc_id)
             .where(SourceDocument.status == "ok", ~retrieved))
    if text:
        query = query.where(SourceDocument.doc_id.ilike(f"%{text}%"))
    query = query.order_by(SourceDocument.source, SourceDocument.doc_id)
    with db.read() as session:
        return [DocHealth(r.doc_id, "", "", 0, 0, None, 0, 0, 0, r.source)
                for r in session.execute(query.offset(offset).limit(limit))]


def source_counts(db: Database) -> dict[str, SourceCounts]:
    d = SourceDocument
    warned = d.warning != ""
    query = select(d.source, d.status, warned, func.count(), func.sum(d.chunk_count)) \
        .group_by(d.source, d.status, warned)
    found: dict[str, list[int]] = {}
    with db.read() as session:
        for source, status, has_warning, count, chunks in session.execute(query):
            entry = found.setdefault(source, [0, 0, 0, 0])
            entry[0 if status == "ok" else 1] += int(count)
            entry[2] += int(chunks or 0)
            entry[3] += int(count) if has_warning and status == "ok" else 0
    return {s: SourceCounts(s, *v) for s, v in found.items()}


def last_runs(db: Database, source: str, limit: int = 10) -> list[SyncRun]:
    query = (select(SyncRun).where(SyncRun.source == source)
             .order_by(SyncRun.started_at.desc(), SyncRun.id.desc()).limit(limit))
    with db.read() as session:
        return list(session.scalars(query))


def problem_documents(db: Database, source: str, *, after: str = "",
                      limit: int = 50) -> list[FailedDocument]:
    """The source's documents that failed or were indexed with a warning, by id, from the
    one after `after` (the last id of the page before): every one of them, page by page."""
    d = SourceDocument
    query = (select(d).where(d.source == source, or_(d.status != "ok", d.warning != ""),
                             d.doc_id > after)
             .order_by(d.doc_id).limit(limit))
    with db.read() as session:
        return [FailedDocument(r.doc_id, r.error if r.status != "ok" else "", r.last_synced,
                               r.warning) for r in session.scalars(query)]


def restricted_ids(db: Database, doc_ids: list[str]) -> set[str]:
    """Which of these documents the public may not read (from their statistics)."""
    if not doc_ids:
        return set()
    query = select(DocumentStats.doc_id).where(DocumentStats.doc_id.in_(set(doc_ids)),
                                               DocumentStats.restricted)
    with db.read() as session:
        return set(session.scalars(query))


GAP_LIMIT = 400  # the newest gap questions a page groups (and the background job embeds)


def gap_questions(db: Database, since: datetime,
                  limit: int = GAP_LIMIT) -> list[GapQuestion]:
    """The window's newest questions that went unanswered or got a thumbs-down."""
    down = exists().where(Feedback.interaction_id == Interaction.id, Feedback.vote == -1)
    closed = exists().where(ClosedGap.interaction_id == Interaction.id)
    query = (select(Interaction.id, Interaction.question, Interaction.created_at,
                    Interaction.status)
             .where(Interaction.created_at >= since,
                    or_(Interaction.status == "no_answer", down), ~closed)
             .order_by(Interaction.id.desc()).limit(limit))
    with db.read() as session:
        return [GapQuestion(r.id, r.question, r.created_at, r.status == "no_answer")
                for r in session.execute(query)]


def nearest_documents(db: Database, interaction_ids: list[int],
                      limit: int = 3) -> list[NearDocument]:
    """The documents retrieval found closest for these questions (best score first)."""
    s = InteractionSource
    best = func.max(s.retrieval_score)
    query: Any = (select(s.doc_id, func.max(s.title), func.max(s.url), best)
                  .where(s.interaction_id.in_(interaction_ids))
                  .group_by(s.doc_id).order_by(best.desc()).limit(limit))
    with db.read() as session:
        return [NearDocument(d, t or "", u or "", float(b)) for d, t, u, b in
                session.execute(query)]


def most_voted_down(db: Database, since: datetime, limit: int = 5) -> list[tuple[str, int]]:
    """The window's answers with the most 👎: (question, 👎 count), most first."""
    downs = func.count(Feedback.id)
    query = (select(Interaction.question, downs)
             .join(Feedback, Feedback.interaction_id == Interaction.id)
             .where(Interaction.created_at >= since, Feedback.vote == -1)
             .group_by(Interaction.id, Interaction.question)
             .order_by(downs.desc(), Interaction.id.desc()).limit(limit))
    with db.read() as session:
        return [(q, int(n)) for q, n in session.execute(query)]
