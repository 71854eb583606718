"""Questions per person per minute, counted in the database so replicas share one count.

Each admitted question leaves a key `quota:<person>:<random>` in `event_keys` that expires
one window later; the count of a person's unexpired keys is the sliding window. The count
and the insert run in one transaction, serialised per person (PostgreSQL advisory lock;
SQLite's writer lock), so replicas asking at once cannot both take the last slot.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import func, insert, select, text

from storage.columns import utc_now
from storage.db import Database
from storage.leases import lease_key
from storage.models import EventKey


class QuotaRepository:
    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self._clock = clock

    def allow(self, who: str, limit: int, window_s: float) -> bool:
        """True, and one question counted, when `who` asked fewer than `limit` in the window."""
        now = self._clock()
        prefix = f"quota:{who}:"
        with self._db.write() as session:
            if self._db.dialect == "postgresql":
                session.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                {"key": lease_key(prefix)})
            # A question of this window expires within one window from now. Bounding
            # expires_at on both sides keeps the count on its index and off the day of event
            # ids and the sessions in the same table (a prefix LIKE cannot use the key's index
            # under most collations); the second window allows for replicas' clock skew.
            used = session.scalar(select(func.count()).select_from(EventKey).where(
                EventKey.expires_at > now,
                EventKey.expires_at <= now + 2 * timedelta(seconds=window_s),
                EventKey.key.startswith(prefix, autoescape=True)))
            if (used or 0) >= limit:
                return False
            session.execute(insert(EventKey).values(
                key=prefix + secrets.token_hex(8),
                expires_at=now + timedelta(seconds=window_s)))
            return True
