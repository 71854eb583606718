"""`sift report`: reads the window's interactions and the document stats into one Report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from storage.columns import utc_now
from storage.db import Database
from storage.models import DocumentGradeDay, DocumentStats, Feedback, Interaction, SourceDocument
from storage.stats import (
    ChannelStats,
    ContentGap,
    FeedbackSummary,
    InteractionRow,
    ModeStats,
    QuestionVotes,
    StageLatency,
    StatusCounts,
    channel_stats,
    content_gaps,
    feedback_summary,
    mode_stats,
    most_downvoted,
    stage_latencies,
    status_counts,
)

RESTRICTED = "(restricted)"


@dataclass(frozen=True)
class DocumentFinding:
    """A document retrieved often whose average best-chunk grade is below the threshold."""

    doc_id: str
    title: str
    retrieved: int
    graded: int
    relevant: int
    average_grade: float
    cited: int
    thumbs_down: int
    restricted: bool = False


@dataclass(frozen=True)
class UnretrievedDocument:
    source: str
    doc_id: str


@dataclass(frozen=True)
class ModelUsage:
    """Tokens a provider's model used over the window, and on how many questions."""

    provider: str
    model: str
    questions: int
    input_tokens: int  # all prompt tokens, cache reads and writes included
    output_tokens: int
    calls: int


@dataclass(frozen=True)
class Report:
    """Window sections cover [since, until]; document sections are all-time (they survive
    purges)."""

    since: datetime
    until: datetime
    statuses: StatusCounts
    latencies: tuple[StageLatency, ...]
    feedback: FeedbackSummary
    downvoted: tuple[QuestionVotes, ...]
    gaps: tuple[ContentGap, ...]
    modes: tuple[ModeStats, ...]
    channels: tuple[ChannelStats, ...]
    low_grade: tuple[DocumentFinding, ...]
    never_retrieved: tuple[UnretrievedDocument, ...]
    never_retrieved_total: int
    relevant_threshold: float
    models: tuple[ModelUsage, ...] = ()


@dataclass(frozen=True)
class ReportOptions:
    window: timedelta = timedelta(days=7)
    relevant_threshold: float = 0.5
    limit: int = 10  # rows per list section
    min_retrieved: int = 3  # "retrieved often"
    include_restricted: bool = False  # show titles of documents the public may not read


def _interaction_rows(session: Session, since: datetime) -> list[InteractionRow]:
    votes = (select(Feedback.interaction_id,
                    func.sum(case((Feedback.vote == 1, 1), else_=0)).label("up"),
                    func.sum(case((Feedback.vote == -1, 1), else_=0)).label("down"))
             .group_by(Feedback.interaction_id).subquery())
    query = (select(Interaction.id, Interaction.question, Interaction.status, Interaction.mode,
                    Interaction.timings_ms, Interaction.created_at, votes.c.up, votes.c.down,
                    Interaction.ab_arm, Interaction.platform, Interaction.channel)
             .outerjoin(votes, votes.c.interaction_id == Interaction.id)
             .where(Interaction.created_at >= since).order_by(Interaction.id))
    return [InteractionRow(r.id, r.question, r.status, r.mode, r.timings_ms or {},
                           r.created_at, int(r.up or 0), int(r.down or 0), r.ab_arm or "",
                           f"{r.platform}:{r.channel}" if r.channel else r.platform)
            for r in session.execute(query)]


def _model_usage(session: Session, since: datetime) -> list[ModelUsage]:
    """Per (provider, model): the questions that used it and its tokens, from each answer's
    stage -> model and stage -> usage."""
    query = (select(Interaction.llm_provider, Interaction.models, Interaction.usage)
             .where(Interaction.created_at >= since))
    totals: dict[tuple[str, str], list[int]] = {}
    for provider, models, usage in session.execute(query):
        seen: set[tuple[str, str]] = set()
        for stage, used in (usage or {}).items():
            model = (models or {}).get(stage)
            if not model or not isinstance(used, dict):
                continue
            key = (provider or "anthropic", str(model))
            entry = totals.setdefault(key, [0, 0, 0, 0])
            entry[1] += sum(int(used.get(k) or 0) for k in
                            ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
            entry[2] += int(used.get("output_tokens") or 0)
            entry[3] += int(used.get("calls") or 0)
            if key not in seen:
                seen.add(key)
                entry[0] += 1
    return [ModelUsage(p, m, *t) for (p, m), t in sorted(totals.items())]


def _low_grade(session: Session, options: ReportOptions) -> list[DocumentFinding]:
    s = DocumentStats
    # A model's grades only: the fast mode's heuristic scores shared words, low by construction.
    relevant = (select(func.coalesce(func.sum(DocumentGradeDay.relevant), 0))
                .where(DocumentGradeDay.doc_id == s.doc_id).scalar_subquery())
    query = (select(s, relevant).where(s.retrieved >= options.min_retrieved, s.model_graded > 0,
                             s.model_grade_sum < options.relevant_threshold * s.model_graded)
             .order_by(s.retrieved.desc(), (s.model_grade_sum / s.model_graded).asc(),
                       s.doc_id)
             .limit(options.limit))
    hide = not options.include_restricted
    return [DocumentFinding(RESTRICTED if d.restricted and hide else d.doc_id,
                            RESTRICTED if d.restricted and hide else d.title, d.retrieved,
                            d.model_graded, int(model_relevant),
                            d.model_grade_sum / d.model_graded, d.cited, d.thumbs_down,
                            d.restricted)
            for d, model_relevant in session.execute(query)]


def _never_retrieved(session: Session, limit: int,
                     include_restricted: bool) -> tuple[list[UnretrievedDocument], int]:
    """Synced documents no question has ever retrieved."""
    base = (select(SourceDocument.source, SourceDocument.doc_id, SourceDocument.restricted)
            .outerjoin(DocumentStats, DocumentStats.doc_id == SourceDocument.doc_id)
            .where(SourceDocument.status == "ok",
                   func.coalesce(DocumentStats.retrieved, 0) == 0))
    total = session.scalar(select(func.count()).select_from(base.subquery())) or 0
    rows = session.execute(base.order_by(SourceDocument.source, SourceDocument.doc_id)
                           .limit(limit))
    return [UnretrievedDocument(r.source, RESTRICTED if r.restricted and not include_restricted
                                else r.doc_id) for r in rows], int(total)


def build_report(db: Database, options: ReportOptions | None = None, *,
                 clock: Callable[[], datetime] = utc_now) -> Report:
    options = options or ReportOptions()
    until = clock()
    since = until - options.window
    with db.read() as session:
        rows = _interaction_rows(session, since)
        models = _model_usage(session, since)
        low = _low_grade(session, options)
        never, never_total = _never_retrieved(session, options.limit,
                                              options.include_restricted)
    return Report(
        since=since, until=until, statuses=status_counts(rows),
        latencies=tuple(stage_latencies(rows)), feedback=feedback_summary(rows),
        downvoted=tuple(most_downvoted(rows, options.limit)),
        gaps=tuple(content_gaps(rows, options.limit)), modes=tuple(mode_stats(rows)),
        channels=tuple(channel_stats(rows, options.limit)),
        low_grade=tuple(low), never_retrieved=tuple(never), never_retrieved_total=never_total,
        relevant_threshold=options.relevant_threshold, models=tuple(models),
    )
