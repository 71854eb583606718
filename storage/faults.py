"""A full disk and an absent database server, told apart from other database errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from storage.errors import DatabaseUnavailable, DiskFull

SQLITE_FULL = 13  # "database or disk is full"
PG_DISK_FULL = "53100"
# SQLSTATEs of a server that is not there for the moment: class 08 (connection exceptions),
# and a server shutting down, crashed, or still starting up.
PG_AWAY = ("08", "57P01", "57P02", "57P03")


@contextmanager
def translated(where: str) -> Iterator[None]:
    """Raise a full disk as DiskFull and an absent server as DatabaseUnavailable, naming the
    database at `where` (the rest of Sift knows no SQLAlchemy); other errors pass as they are."""
    try:
        yield
    except DBAPIError as exc:
        if disk_full(exc):
            raise DiskFull(f"The disk under the database at {where} is full: nothing can be "
                           f"saved until room is made ({_first_line(exc)}).") from exc
        if server_away(exc):
            raise DatabaseUnavailable(f"The database at {where} is unreachable: "
                                      f"{_first_line(exc)}") from exc
        raise


def disk_full(exc: DBAPIError) -> bool:
    orig = exc.orig
    return (getattr(orig, "sqlite_errorcode", None) == SQLITE_FULL
            or getattr(orig, "sqlstate", None) == PG_DISK_FULL)


def server_away(exc: DBAPIError) -> bool:
    """PostgreSQL refused the connection, dropped it, or is shutting down or starting up."""
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    if not type(orig).__module__.startswith("psycopg"):
        return False  # SQLite has no server to wait for
    state = getattr(orig, "sqlstate", None)
    if state is None:  # psycopg's own: it could not connect at all, or the socket broke
        return isinstance(exc, OperationalError | InterfaceError)
    return bool(state.startswith(PG_AWAY))


def _first_line(exc: DBAPIError) -> str:
    return str(exc.orig or exc).strip().splitlines()[0]
