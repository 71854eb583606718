"""Interactions: records answers with their candidates and updates document stats atomically."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, insert, or_, select, update

from storage.columns import text_hash, utc_now
from storage.db import Database
from storage.doc_stats import COUNTERS, LATEST, document_deltas, is_cited, stats_rows
from storage.errors import UnknownInteraction
from storage.grade_days import EVIDENCE_GRADERS, add_to_days, best_evidence, grade_day_rows
from storage.models import DocumentStats, Interaction, InteractionSource, table
from storage.rollup import Asked, Rollup
from storage.shapes import AnswerLike, CandidateLike, UsageLike
from storage.upsert import upsert


def _usage(usage: UsageLike) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens, "calls": usage.calls}


def _source_row(interaction_id: int, candidate: CandidateLike, cited: bool,
                citation: int | None) -> dict[str, Any]:
    grade, chunk = candidate.grade, candidate.chunk
    return {
        "interaction_id": interaction_id, "rank": candidate.rank, "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id, "title": chunk.title, "url": chunk.url,
        "retrieval_score": candidate.retrieval_score,
        "grade_score": grade.score if grade else None,
        "grade_reason": grade.reason if grade else "",
        "grade_source": str(grade.source) if grade else None,
        "selected": candidate.selected, "cited": cited, "citation": citation,
        "access": list(chunk.access),
    }


def asked(row: dict[str, Any]) -> Asked:
    """The rollup's view of an interaction's column values."""
    return Asked(row["created_at"], row["platform"], row["channel"], row["status"], row["mode"],
                 row["ab_arm"] or "", row["timings_ms"] or {}, row["usage"] or {},
                 row["models"] or {})


# Core statements, built once: the ORM's unit of work and bulk-insert path cost most of
# recording's CPU, and an answer is recorded on every question.
_INTERACTIONS = table(Interaction)
_INSERT_INTERACTION = insert(_INTERACTIONS).returning(_INTERACTIONS.c.id)
_INSERT_SOURCES = insert(table(InteractionSource))
_ATTACH = (update(_INTERACTIONS).where(_INTERACTIONS.c.id == bindparam("interaction"))
           .values(message_channel=bindparam("posted_in"), message_ref=bindparam("posted_as")))


@dataclass(frozen=True)
class RecalledCitation:
    n: int
    doc_id: str
    title: str
    url: str
    chunk_id: str
    access: tuple[str, ...] = ()  # the groups that could read it when answered; () nobody


@dataclass(frozen=True)
class Recalled:
    """A stored answer, enough to show it again (share a private answer to its channel)."""

    platform: str
    channel: str
    user: str
    question: str
    text: str
    status: str
    citations: tuple[RecalledCitation, ...]
    # What the answer was written from besides its citations (selected, not cited): a share
    # must check these too, since the model read them.
    uncited: tuple[RecalledCitation, ...] = ()


@dataclass(frozen=True)
class AskedBefore:
    question: str
    status: str
    created_at: datetime


class InteractionRepository:
    """Satisfies rag's `InteractionRecorder` and the chat adapters' message links."""

    def __init__(self, db: Database, *, relevant_threshold: float = 0.5,
                 store_text: bool = True, clock: Callable[[], datetime] = utc_now,
                 evidence_sources: Collection[str] = EVIDENCE_GRADERS) -> None:
        self._db = db
        self._threshold = relevant_threshold
        self._evidence = frozenset(evidence_sources)  # graders whose grades teach the prior
        self._store_text = store_text
        self._clock = clock

    def _text(self, value: str) -> str:
        return value if self._store_text or not value else text_hash(value)

    def _interaction(self, answer: AnswerLike, now: datetime) -> dict[str, Any]:
        q = answer.question
        ctx = q.context
        return {
            "created_at": now, "platform": str(ctx.platform), "workspace": ctx.workspace,
            "channel": ctx.channel, "thread": ctx.thread, "user_id": ctx.user,
            "correlation_id": q.correlation_id, "question": self._text(q.text),
            "search_query": self._text(answer.search_query), "answer": self._text(answer.text),
            "status": str(answer.status), "mode": str(answer.mode), "ab_arm": answer.ab_arm,
            "policy": getattr(ctx, "policy", ""),
            "timings_ms": dict(answer.timings_ms),
            "usage": {stage: _usage(u) for stage, u in answer.usage.items()},
            "models": dict(answer.models),
            "llm_provider": answer.llm_provider if answer.models else "",
        }

    def record(self, answer: AnswerLike) -> int:
        """Store the answer, one row per candidate, every retrieved document's counters and
        its day's tally of graded retrievals."""
        now = self._clock()
        cited_chunks = {c.chunk_id for c in answer.citations}
        numbers = {c.chunk_id: c.n for c in answer.citations}
        deltas = document_deltas(answer.candidates, cited_chunks, self._threshold)
        evidence = best_evidence(answer.candidates, self._evidence)
        days = grade_day_rows(evidence, self._threshold, now)
        row = self._interaction(answer, now)
        with self._db.write() as session:
            interaction_id: int = session.execute(_INSERT_INTERACTION, row).scalar_one()
            sources = [_source_row(interaction_id, c, is_cited(c, cited_chunks),
                                   numbers.get(c.chunk.chunk_id))
                       for c in answer.candidates]
            if sources:
                session.execute(_INSERT_SOURCES, sources)
            if deltas:
                session.execute(upsert(self._db.dialect, table(DocumentStats), keys=("doc_id",),
                                       add=COUNTERS, replace=LATEST),
                                stats_rows(deltas, now, evidence))
            if days:
                session.execute(add_to_days(self._db.dialect), days)
            # After document_stats, as in voting: one lock order for every writer.
            day = Rollup()
            day.add(asked(row))
            day.write(self._db.dialect, session)
            return interaction_id

    def find_by_message(self, platform: str, channel: str, message_ref: str) -> int | None:
        """The interaction whose answer is that platform message (the newest, if several)."""
        query = (select(Interaction.id)
                 .where(Interaction.platform == platform,
                        Interaction.message_channel == channel,
                        Interaction.message_ref == message_ref)
                 .order_by(Interaction.id.desc()).limit(1))
        with self._db.read() as session:
            return session.scalar(query)

    def attach_message(self, interaction_id: int, channel: str, message_ref: str) -> None:
        """Remember where the answer was posted; raises UnknownInteraction for a bad id."""
        values = {"interaction": interaction_id, "posted_in": channel, "posted_as": message_ref}
        with self._db.write_one() as session:
            if cast(CursorResult[Any], session.execute(_ATTACH, values)).rowcount == 0:
                raise UnknownInteraction(interaction_id)

    def get(self, interaction_id: int) -> Interaction | None:
        with self._db.read() as session:
            return session.get(Interaction, interaction_id)

    def sources(self, interaction_id: int) -> list[InteractionSource]:
        query = (select(InteractionSource).where(InteractionSource.interaction_id ==
                                                 interaction_id)
                 .order_by(InteractionSource.rank))
        with self._db.read() as session:
            return list(session.scalars(query))

    def recall(self, interaction_id: int) -> Recalled | None:
        """The answer as it was given; None when unknown or stored only as a hash."""
        with self._db.read() as session:
            row = session.get(Interaction, interaction_id)
            if row is None or not self._store_text:
                return None
            used = list(session.scalars(select(InteractionSource).where(
                InteractionSource.interaction_id == interaction_id,
                or_(InteractionSource.selected, InteractionSource.citation.is_not(None)))
                .order_by(InteractionSource.rank)))
            citations = tuple(RecalledCitation(c.citation or 0, c.doc_id, c.title, c.url,
                                               c.chunk_id, tuple(c.access or ()))
                              for c in sorted((c for c in used if c.citation is not None),
                                              key=lambda c: c.citation or 0))
            read = tuple(RecalledCitation(0, c.doc_id, c.title, c.url, c.chunk_id,
                                          tuple(c.access or ()))
                         for c in used if c.citation is None)
            return Recalled(row.platform, row.channel, row.user_id, row.question, row.answer,
                            row.status, citations, read)

    def asked_by(self, platform: str, user: str, limit: int = 5) -> list[AskedBefore]:
        """The person's latest questions, newest first (text storage off: none)."""
        if not self._store_text:
            return []
        query = (select(Interaction).where(Interaction.platform == platform,
                                           Interaction.user_id == user)
                 .order_by(Interaction.id.desc()).limit(limit))
        with self._db.read() as session:
            return [AskedBefore(r.question, r.status, r.created_at)
                    for r in session.scalars(query)]
