"""The admin console's questions: a filtered list paged by id, and one question in full."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, exists, func, or_, select
from sqlalchemy.orm import Session

from storage.db import Database
from storage.models import DocumentStats, Feedback, Interaction, InteractionSource

VOTES = ("up", "down", "none")


@dataclass(frozen=True)
class QuestionFilter:
    text: str = ""
    status: str = ""
    platform: str = ""
    channel: str = ""
    vote: str = ""  # up, down, none (no vote at all)
    doc_id: str = ""  # questions that retrieved this document
    since: datetime | None = None
    until: datetime | None = None
    # False for a viewer: the text search reads no answer written from a restricted document,
    # or a guessed string would tell whether such an answer holds it.
    restricted_answers: bool = True


@dataclass(frozen=True)
class QuestionRow:
    id: int
    created_at: datetime
    platform: str
    channel: str
    question: str
    status: str
    mode: str
    total_ms: float | None
    up: int
    down: int


@dataclass(frozen=True)
class QuestionPage:
    rows: list[QuestionRow]
    older: int | None  # pass as `before` for the next page; None on the last one


@dataclass(frozen=True)
class QuestionDetail:
    interaction: Interaction
    sources: list[InteractionSource]
    feedback: list[Feedback]


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _voted(vote: int) -> Any:
    return exists().where(Feedback.interaction_id == Interaction.id, Feedback.vote == vote)


def written_from_restricted() -> Any:
    """The interaction's answer read (selected or cited) a document the public may not."""
    return exists().where(InteractionSource.interaction_id == Interaction.id,
                          or_(InteractionSource.selected, InteractionSource.cited),
                          DocumentStats.doc_id == InteractionSource.doc_id,
                          DocumentStats.restricted)


def _filtered(query: Select[Any], f: QuestionFilter) -> Select[Any]:
    conditions: list[Any] = []
    if f.text:
        in_answer: Any = Interaction.answer.ilike(_like(f.text), escape="\\")
        if not f.restricted_answers:
            in_answer = and_(in_answer, ~written_from_restricted())
        conditions.append(or_(Interaction.question.ilike(_like(f.text), escape="\\"),
                              in_answer))
    for column, value in ((Interaction.status, f.status), (Interaction.platform, f.platform),
                          (Interaction.channel, f.channel)):
        if value:
            conditions.append(column == value)
    if f.vote == "up":
        conditions.append(_voted(1))
    elif f.vote == "down":
        conditions.append(_voted(-1))
    elif f.vote == "none":
        conditions.append(~exists().where(Feedback.interaction_id == Interaction.id))
    if f.doc_id:
        conditions.append(exists().where(InteractionSource.interaction_id == Interaction.id,
                                         InteractionSource.doc_id == f.doc_id))
    if f.since is not None:
        conditions.append(Interaction.created_at >= f.since)
    if f.until is not None:
        conditions.append(Interaction.created_at < f.until)
    return query.where(and_(*conditions)) if conditions else query


def _votes(session: Session, ids: list[int]) -> dict[int, tuple[int, int]]:
    if not ids:
        return {}
    query = (select(Feedback.interaction_id, Feedback.vote, func.count())
             .where(Feedback.interaction_id.in_(ids))
             .group_by(Feedback.interaction_id, Feedback.vote))
    found: dict[int, list[int]] = {}
    for interaction_id, vote, count in session.execute(query):
        found.setdefault(interaction_id, [0, 0])[0 if vote == 1 else 1] += int(count)
    return {k: (v[0], v[1]) for k, v in found.items()}


def list_questions(db: Database, f: QuestionFilter, *, before: int | None = None,
                   limit: int = 50) -> QuestionPage:
    """Newest first; `before` (an id) continues where the previous page stopped."""
    query: Any = select(Interaction.id, Interaction.created_at, Interaction.platform,
                   Interaction.channel, Interaction.question, Interaction.status,
                   Interaction.mode, Interaction.timings_ms)
    query = _filtered(query, f)
    if before is not None:
        query = query.where(Interaction.id < before)
    query = query.order_by(Interaction.id.desc()).limit(limit + 1)
    with db.read() as session:
        found = list(session.execute(query))
        page, more = found[:limit], len(found) > limit
        votes = _votes(session, [r.id for r in page])
    rows = [QuestionRow(r.id, r.created_at, r.platform, r.channel, r.question, r.status, r.mode,
                        (r.timings_ms or {}).get("total"), *votes.get(r.id, (0, 0)))
            for r in page]
    return QuestionPage(rows, rows[-1].id if more and rows else None)


def question_detail(db: Database, interaction_id: int) -> QuestionDetail | None:
    with db.read() as session:
        interaction = session.get(Interaction, interaction_id)
        if interaction is None:
            return None
        sources = session.scalars(select(InteractionSource)
                                  .where(InteractionSource.interaction_id == interaction_id)
                                  .order_by(InteractionSource.rank))
        votes = session.scalars(select(Feedback).where(Feedback.interaction_id ==
                                                       interaction_id)
                                .order_by(Feedback.updated_at))
        return QuestionDetail(interaction, list(sources), list(votes))


def channels(db: Database, limit: int = 200) -> list[str]:
    """Channel names for the filter's choices."""
    query = select(Interaction.channel).distinct().order_by(Interaction.channel).limit(limit)
    with db.read() as session:
        return [c for c in session.scalars(query) if c]
