"""A named lease held across processes and machines: PostgreSQL session advisory locks.

Replicas of `sift serve` share one PostgreSQL; a scheduled sync takes the source's lease, so
one replica runs it and the others skip that tick. The lease lives on one dedicated
connection: a replica that dies mid-sync loses the connection, and PostgreSQL releases the
lease with it. SQLite deployments are one machine; the file lock beside the database does.
"""

from __future__ import annotations

import hashlib
from types import TracebackType

from sqlalchemy import Connection, text

from storage.db import Database
from storage.errors import StorageError


class LeaseTaken(StorageError):
    """Another process holds the lease."""


def lease_key(name: str) -> int:
    """A stable signed 64-bit key for `name` (advisory locks are keyed by bigint)."""
    digest = hashlib.sha256(f"sift-lease:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class Lease:
    """`with Lease(db, "sync:wiki"):` — raises LeaseTaken at once if another holds it."""

    def __init__(self, db: Database, name: str) -> None:
        if db.dialect != "postgresql":
            raise ValueError("leases need PostgreSQL; SQLite runs use the file lock")
        self._db = db
        self.name = name
        self._connection: Connection | None = None

    def acquire(self) -> None:
        connection = self._db.engine.connect()
        try:
            taken = connection.execute(text("SELECT pg_try_advisory_lock(:key)"),
                                       {"key": lease_key(self.name)}).scalar()
            connection.commit()
        except Exception:
            connection.close()
            raise
        if not taken:
            connection.close()
            raise LeaseTaken(f"the lease {self.name!r} is held by another Sift process")
        self._connection = connection

    def release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"),
                               {"key": lease_key(self.name)})
            connection.commit()
        finally:
            connection.close()  # closing the session would drop the lock anyway

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
