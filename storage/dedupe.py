"""Event dedupe: the first claim of a platform event id wins, across restarts and processes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete

from storage.columns import utc_now
from storage.db import Database
from storage.models import EventKey, table
from storage.upsert import insert_for

_table = table(EventKey)


class DedupeRepository:
    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def claim(self, key: str, ttl_s: float) -> bool:
        """True for the first claimant of `key`, False while that claim is unexpired.

        One statement decides: the insert wins, or the conflicting row is taken over only if
        it has expired. The database serialises racing claimants on the key's row.
        """
        now = self._clock()
        stmt = insert_for(self._db.dialect, _table).values(
            key=key, expires_at=now + timedelta(seconds=ttl_s))
        stmt = stmt.on_conflict_do_update(
            index_elements=[_table.c.key], set_={"expires_at": stmt.excluded.expires_at},
            where=_table.c.expires_at <= now).returning(_table.c.key)
        # RETURNING, not rowcount: psycopg reports no rowcount for INSERT ... ON CONFLICT.
        with self._db.write() as session:
            return session.execute(stmt).first() is not None

    def prune(self) -> int:
        """Forget expired claims; returns how many."""
        with self._db.write() as session:
            statement = delete(_table).where(_table.c.expires_at <= self._clock())
            result: Any = session.execute(statement)
            return int(result.rowcount)
