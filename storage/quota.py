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

from sqlalchemy import bindparam, func, insert, select, text

from storage.columns import utc_now
from storage.db import Database
from storage.leases import lease_key
from storage.models import EventKey, table

_keys = table(EventKey)
# Built once, values as parameters: every admitted question runs these.
_LOCK = text("SELECT pg_advisory_xact_lock(:key)")
# A question of this window expires within one window from now. Bounding expires_at on both
# sides keeps the count on its index and off the day of event ids and the sessions in the
# same table (a prefix LIKE cannot use the key's index under most collations); the second
# window allows for replicas' clock skew.
_USED = select(func.count()).select_from(_keys).where(
    _keys.c.expires_at > bindparam("now"), _keys.c.expires_at <= bindparam("horizon"),
    _keys.c.key.like(bindparam("pattern"), escape="\\"))
_COUNT_ONE = insert(_keys)


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


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
                session.execute(_LOCK, {"key": lease_key(prefix)})
            used = session.scalar(_USED, {
                "now": now, "horizon": now + 2 * timedelta(seconds=window_s),
                "pattern": _like_prefix(prefix)})
            if (used or 0) >= limit:
                return False
            session.execute(_COUNT_ONE, {"key": prefix + secrets.token_hex(8),
                                         "expires_at": now + timedelta(seconds=window_s)})
            return True
