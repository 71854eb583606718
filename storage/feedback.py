"""Feedback: one vote per person per answer, mirrored onto the stats of the documents it cited."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, bindparam, func, select, update
from sqlalchemy.orm import Session

from storage.columns import text_hash, utc_now
from storage.db import Database
from storage.errors import StorageError, UnknownInteraction
from storage.models import (
    DocumentStats,
    DocumentVote,
    Feedback,
    Interaction,
    InteractionSource,
    table,
)
from storage.rollup import Asked, record_vote
from storage.upsert import upsert

log = logging.getLogger(__name__)

_stats = table(DocumentStats)
_votes = table(DocumentVote)


def thumbs_delta(old: int | None, new: int | None) -> tuple[int, int]:
    """(thumbs_up, thumbs_down) change when a person's vote goes from `old` to `new`."""
    return int(new == 1) - int(old == 1), int(new == -1) - int(old == -1)


class FeedbackRepository:
    """Votes from reactions, buttons and the terminal; a new vote replaces the previous one."""

    def __init__(self, db: Database, *, store_text: bool = True,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._store_text = store_text
        self._clock = clock

    def _comment(self, comment: str | None) -> str | None:
        if comment is None or self._store_text:
            return comment
        return text_hash(comment)

    def vote(self, interaction_id: int, user: str, vote: int, channel: str,
             comment: str | None = None) -> None:
        if vote not in (1, -1):
            raise StorageError(f"A vote is +1 or -1, not {vote!r}; nothing was written.")
        now = self._clock()
        row: dict[str, Any] = {"interaction_id": interaction_id, "user_id": user, "vote": vote,
                               "channel": channel, "comment": self._comment(comment),
                               "created_at": now, "updated_at": now}
        replace = ["vote", "channel", "updated_at"] + (["comment"] if comment is not None else [])
        with self._db.write() as session:
            old = self._previous(session, interaction_id, user)
            session.execute(upsert(self._db.dialect, table(Feedback),
                                   keys=("interaction_id", "user_id"), replace=replace), [row])
            cited = self._cited(session, interaction_id)
            if cited:
                session.execute(upsert(self._db.dialect, _votes,
                                       keys=("doc_id", "interaction_id", "user_id"),
                                       replace=("vote", "updated_at")),
                                [{"doc_id": doc, "interaction_id": interaction_id,
                                  "user_id": user, "vote": vote, "updated_at": now}
                                 for doc in cited])
            self._move_thumbs(session, interaction_id, old, vote, cited)

    def retract(self, interaction_id: int, user: str) -> None:
        """Take a vote back (a removed reaction); retracting no vote is not an error."""
        with self._db.write() as session:
            old = self._previous(session, interaction_id, user)
            if old is None:
                return
            session.execute(table(Feedback).delete().where(
                Feedback.interaction_id == interaction_id, Feedback.user_id == user))
            self._forget(session, interaction_id, user)
            self._move_thumbs(session, interaction_id, old, None)

    def retract_matching(self, interaction_id: int, user: str, vote: int, channel: str) -> bool:
        """Take a vote back only while it is still `vote` cast through `channel`: removing a 👍
        must not undo the 👎 or the button click that replaced it. True when one was."""
        statement = table(Feedback).delete().where(
            Feedback.interaction_id == interaction_id, Feedback.user_id == user,
            Feedback.vote == vote, Feedback.channel == channel)
        with self._db.write() as session:
            self._lock(session, interaction_id)
            if cast(CursorResult[Any], session.execute(statement)).rowcount == 0:
                return False
            self._forget(session, interaction_id, user)
            self._move_thumbs(session, interaction_id, vote, None)
            return True

    def add_comment(self, interaction_id: int, user: str, comment: str) -> None:
        """Attach the person's explanation to their vote; without a vote there is nothing to
        attach it to (it was retracted meanwhile), which is logged, not raised."""
        now = self._clock()
        statement = (update(Feedback)
                     .where(Feedback.interaction_id == interaction_id, Feedback.user_id == user)
                     .values(comment=self._comment(comment), updated_at=now))
        with self._db.write() as session:
            self._lock(session, interaction_id)
            result = cast(CursorResult[Any], session.execute(statement))
            if result.rowcount == 0:
                log.info("comment on interaction %s ignored: no vote to attach it to",
                         interaction_id)
                return
            # The vote's time moves with it (the prior weighs a vote by when it was last
            # touched), in its per-document copies too.
            session.execute(update(_votes).where(_votes.c.interaction_id == interaction_id,
                                                 _votes.c.user_id == user)
                            .values(updated_at=now))

    def votes(self, interaction_id: int) -> dict[str, int]:
        query = select(Feedback.user_id, Feedback.vote).where(
            Feedback.interaction_id == interaction_id)
        with self._db.read() as session:
            return {user: vote for user, vote in session.execute(query)}

    @staticmethod
    def _lock(session: Session, interaction_id: int) -> None:
        """Serialise votes on one answer (PostgreSQL row lock; SQLite's writer lock already
        does) and refuse an unknown id before anything is written."""
        query = select(Interaction.id).where(Interaction.id == interaction_id).with_for_update()
        if session.scalar(query) is None:
            raise UnknownInteraction(interaction_id)

    @staticmethod
    def _move_day(session: Session, interaction_id: int, old: int | None,
                  new: int | None) -> None:
        """The overview's per-day votes follow the change (after the stats: one lock order)."""
        up, down = thumbs_delta(old, new)
        row = session.execute(select(
            Interaction.created_at, Interaction.platform, Interaction.channel,
            Interaction.status, Interaction.mode, Interaction.ab_arm)
            .where(Interaction.id == interaction_id)).one()
        votes_now = session.scalar(select(func.count()).select_from(Feedback)
                                   .where(Feedback.interaction_id == interaction_id)) or 0
        votes_before = votes_now - int(old is None and new is not None) \
            + int(old is not None and new is None)
        voted = int(votes_now > 0) - int(votes_before > 0)
        if up or down or voted:
            record_vote(session, Asked(*row, timings_ms={}, usage={}, models={}), up, down,
                        voted)

    def _previous(self, session: Session, interaction_id: int, user: str) -> int | None:
        self._lock(session, interaction_id)
        return session.scalar(select(Feedback.vote).where(
            Feedback.interaction_id == interaction_id, Feedback.user_id == user))

    @staticmethod
    def _cited(session: Session, interaction_id: int) -> list[str]:
        """The documents the answer cited, in doc_id order (the order rows are locked in)."""
        return list(session.scalars(
            select(InteractionSource.doc_id).distinct()
            .where(InteractionSource.interaction_id == interaction_id, InteractionSource.cited)
            .order_by(InteractionSource.doc_id)))

    @staticmethod
    def _forget(session: Session, interaction_id: int, user: str) -> None:
        """The retracted vote's per-document copies go with it."""
        session.execute(_votes.delete().where(_votes.c.interaction_id == interaction_id,
                                              _votes.c.user_id == user))

    @staticmethod
    def _move_thumbs(session: Session, interaction_id: int, old: int | None,
                     new: int | None, cited: list[str] | None = None) -> None:
        up, down = thumbs_delta(old, new)
        if not up and not down:
            return
        if cited is None:
            cited = FeedbackRepository._cited(session, interaction_id)
        if cited:
            # One statement per document, in doc_id order: the same lock order as record().
            statement = (update(_stats).where(_stats.c.doc_id == bindparam("target"))
                         .values(thumbs_up=_stats.c.thumbs_up + up,
                                 thumbs_down=_stats.c.thumbs_down + down))
            session.connection().execute(statement, [{"target": doc} for doc in cited])
        FeedbackRepository._move_day(session, interaction_id, old, new)
