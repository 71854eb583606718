"""Conversation history: the last few turns of each thread or chat, oldest first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, select

from storage.columns import utc_now
from storage.db import Database
from storage.models import ConversationTurn, table

_Turn = ConversationTurn
_table = table(ConversationTurn)


class HistoryRepository:
    """Bounded per conversation: each append trims the conversation to its newest `keep` turns.

    Turns are text, because rewriting a follow-up needs the words. With `max_age` (set when
    `store_text` is off) they also live only that long: every append deletes older turns of
    every conversation, and `recent` never returns them. `sift db purge` removes old turns.
    """

    def __init__(self, db: Database, *, max_age: timedelta | None = None,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._max_age = max_age
        self._clock = clock

    def append(self, conversation_key: str, turns: Sequence[tuple[str, str]],
               keep: int = 20) -> None:
        """Add (role, text) turns in one transaction: a question and its answer are stored
        together, so a follow-up never reads the question without the answer."""
        with self._db.write() as session:
            if self._max_age is not None:
                session.execute(delete(_table).where(
                    _table.c.created_at < self._clock() - self._max_age))
            if keep > 0:
                now = self._clock()
                session.add_all(_Turn(conversation_key=conversation_key, role=role, text=text,
                                      created_at=now) for role, text in turns)
                session.flush()
            newest = (select(_Turn.id).where(_Turn.conversation_key == conversation_key)
                      .order_by(_Turn.id.desc()).limit(max(keep, 0)))
            session.execute(delete(_table).where(_table.c.conversation_key == conversation_key,
                                                 _table.c.id.not_in(newest)))

    def recent(self, conversation_key: str, n: int) -> list[tuple[str, str]]:
        """The last `n` turns as (role, text), oldest first."""
        if n <= 0:
            return []
        query = (select(_Turn.role, _Turn.text).where(_Turn.conversation_key == conversation_key)
                 .order_by(_Turn.id.desc()).limit(n))
        if self._max_age is not None:
            query = query.where(_Turn.created_at >= self._clock() - self._max_age)
        with self._db.read() as session:
            rows = [(role, text) for role, text in session.execute(query)]
        return rows[::-1]

    def forget(self, conversation_key: str) -> None:
        """Delete a conversation's turns (its person signed out: the conversation ended)."""
        with self._db.write() as session:
            session.execute(delete(_table).where(_table.c.conversation_key == conversation_key))
