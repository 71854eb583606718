"""Event dedupe: the first claim of a platform event id wins, across restarts and processes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import bindparam, delete
from sqlalchemy.sql.dml import Insert

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
        values = {"claimed": key, "until": now + timedelta(seconds=ttl_s), "now": now}
        with self._db.write_one() as session:
            return session.execute(_claim(self._db.dialect), values).first() is not None

    def prune(self) -> int:
        """Forget expired claims; returns how many."""
        with self._db.write() as session:
            statement = delete(_table).where(_table.c.expires_at <= self._clock())
            result: Any = session.execute(statement)
            return int(result.rowcount)


@lru_cache(maxsize=2)
def _claim(dialect: str) -> Insert:
    """The claim, built once per dialect with its values as parameters (every event is claimed:
    a statement built per call was garbage to collect on every message)."""
    stmt = insert_for(dialect, _table).values(key=bindparam("claimed"),
                                              expires_at=bindparam("until"))
    # RETURNING, not rowcount: psycopg reports no rowcount for INSERT ... ON CONFLICT.
    claimed: Insert = stmt.on_conflict_do_update(
        index_elements=[_table.c.key], set_={"expires_at": stmt.excluded.expires_at},
        where=_table.c.expires_at <= bindparam("now")).returning(_table.c.key)
    return claimed
