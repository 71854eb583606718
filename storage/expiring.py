"""Short-lived state in `event_keys`, shared by every replica: values that expire, and counts.

Console sessions, pending single sign-ons, pending comments and failed sign-ins live here
rather than in one process's memory, so that any replica (or `sift serve` worker) behind a
load balancer sees what another one wrote. Callers choose prefixed keys ("session:...");
keys that carry a secret (a session cookie) are stored as hashes by the caller.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update

from storage.columns import utc_now
from storage.db import Database
from storage.models import EventKey, table
from storage.upsert import insert_for, upsert

_table = table(EventKey)
Value = dict[str, Any]


class ExpiringStore:
    def __init__(self, db: Database, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._db = db
        self.clock = clock

    def put(self, key: str, value: Value, ttl_s: float) -> None:
        """Store `value` under `key` for `ttl_s` seconds, replacing what was there."""
        row = {"key": key, "value": json.dumps(value), "expires_at": self._expiry(ttl_s)}
        with self._db.write() as session:
            session.execute(upsert(self._db.dialect, _table, keys=("key",),
                                   replace=("value", "expires_at")), row)

    def get(self, key: str, *, renew_s: float | None = None) -> Value | None:
        """The unexpired value under `key`, or None; `renew_s` moves its expiry that far
        from now (a sliding idle timeout)."""
        live = (_table.c.key == key) & (_table.c.expires_at > self.clock())
        if renew_s is None:
            with self._db.read() as session:
                found = session.execute(select(_table.c.value).where(live)).scalar()
        else:
            with self._db.write() as session:
                found = session.execute(update(_table).where(live).values(
                    expires_at=self._expiry(renew_s)).returning(_table.c.value)).scalar()
        return json.loads(found) if found else None

    def take(self, key: str) -> Value | None:
        """The unexpired value under `key`, removed in the same statement: of two replicas
        taking at once, one gets it."""
        with self._db.write() as session:
            found = session.execute(delete(_table).where(_table.c.key == key).returning(
                _table.c.value, _table.c.expires_at)).first()
        if found is None or found.value is None or found.expires_at <= self.clock():
            return None
        return json.loads(found.value)

    def delete(self, key: str) -> None:
        with self._db.write() as session:
            session.execute(delete(_table).where(_table.c.key == key))

    def count(self, prefix: str, ttl_s: float) -> None:
        """Count one event under `prefix` for `ttl_s` seconds (see `expiries`)."""
        with self._db.write() as session:
            session.execute(insert_for(self._db.dialect, _table).values(
                key=prefix + secrets.token_hex(8), expires_at=self._expiry(ttl_s)))

    def expiries(self, prefix: str) -> list[datetime]:
        """When each unexpired event counted under `prefix` expires, earliest first."""
        with self._db.read() as session:
            return list(session.execute(
                select(_table.c.expires_at).where(
                    _table.c.key.startswith(prefix, autoescape=True),
                    _table.c.expires_at > self.clock())
                .order_by(_table.c.expires_at)).scalars())

    def _expiry(self, ttl_s: float) -> datetime:
        return self.clock() + timedelta(seconds=ttl_s)
