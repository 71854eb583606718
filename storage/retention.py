"""Retention: `sift db purge` deletes what is older than a cutoff; durations like "90d"."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, delete, func, select
from sqlalchemy.orm import Session

from storage.answers import REJECTED
from storage.columns import utc_now
from storage.db import Database
from storage.models import (
    AnswerDraft,
    Base,
    ConversationTurn,
    EventKey,
    Feedback,
    GradeCacheEntry,
    HelpQuestion,
    Interaction,
    InteractionSource,
    SyncRun,
    table,
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """"90d", "12h", "30m", "2w", "45s" -> timedelta; anything else raises ValueError."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"'{text}' is not a duration: use a number and a unit s, m, h, d "
                         "or w, for example 90d or 12h.")
    amount, unit = float(match.group(1)), match.group(2).lower()
    if amount <= 0:
        raise ValueError(f"'{text}' is not a positive duration.")
    return timedelta(**{_UNITS[unit]: amount})


@dataclass(frozen=True)
class PurgeCounts:
    interactions: int = 0
    sources: int = 0
    feedback: int = 0
    conversation_turns: int = 0
    sync_runs: int = 0
    event_keys: int = 0
    grades: int = 0
    help_questions: int = 0  # help channels' questions and outcomes (who asked)
    rejected_drafts: int = 0  # answer drafts a reviewer rejected (people's replies)


def _count(session: Session, query: Any) -> int:
    return int(session.scalar(select(func.count()).select_from(query.subquery())) or 0)


def _delete(session: Session, table: Table, *where: Any) -> int:
    result: Any = session.execute(delete(table).where(*where))
    return int(result.rowcount)


def _delete_before(session: Session, model: type[Base], column: str, cutoff: datetime) -> int:
    target = table(model)
    return _delete(session, target, target.c[column] < cutoff)


class Retention:
    """Deletes personal history past the cutoff.

    Document stats are lifetime totals and hold no personal data, so they are kept: a purged
    interaction can no longer be voted on or retracted (UnknownInteraction), so its
    contribution to thumbs is final and the counters stay coherent.
    """

    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def purge(self, older_than: timedelta) -> PurgeCounts:
        now = self._clock()
        cutoff = now - older_than
        old = select(Interaction.id).where(Interaction.created_at < cutoff)
        drafts = table(AnswerDraft)  # pending ones wait for review; approved ones are documents
        with self._db.write() as session:
            sources = _count(session, select(InteractionSource.id).where(
                InteractionSource.interaction_id.in_(old)))
            feedback = _count(session, select(Feedback.id).where(Feedback.interaction_id.in_(old)))
            # Sources and feedback go with their interaction (ON DELETE CASCADE).
            return PurgeCounts(
                interactions=_delete_before(session, Interaction, "created_at", cutoff),
                sources=sources, feedback=feedback,
                conversation_turns=_delete_before(session, ConversationTurn, "created_at",
                                                  cutoff),
                sync_runs=self._old_runs(session, cutoff),
                event_keys=_delete_before(session, EventKey, "expires_at", now),
                grades=_delete_before(session, GradeCacheEntry, "created_at", cutoff),
                help_questions=_delete_before(session, HelpQuestion, "asked_at", cutoff),
                rejected_drafts=_delete(session, drafts, drafts.c.status == REJECTED,
                                        drafts.c.reviewed_at < cutoff),
            )

    @staticmethod
    def _old_runs(session: Session, cutoff: datetime) -> int:
        """Old runs go, except each source's last success: it is the incremental checkpoint."""
        runs = table(SyncRun)
        checkpoints = (select(func.max(runs.c.id)).where(runs.c.status == "ok")
                       .group_by(runs.c.source))
        return _delete(session, runs, runs.c.started_at < cutoff, runs.c.id.not_in(checkpoints))
