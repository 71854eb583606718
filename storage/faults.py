"""A full disk and an absent database server, told apart from other database errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from storage.errors import DatabaseUnavailable, DiskFull

SQLITE_FULL = 13  # "database or disk is full"
SQLITE_IOERR = 10  # "disk I/O error": what a full disk gives when the -shm file cannot grow
NO_ROOM_BYTES = 2**20  # an I/O error with less free than this is the full disk
PG_DISK_FULL = "53100"
# SQLSTATEs of a server that is not there for the moment: class 08 (connection exceptions),
# and a server shutting down, crashed, or still starting up.
PG_AWAY = ("08", "57P01", "57P02", "57P03")


@contextmanager
def translated(where: str, file: Path | None = None) -> Iterator[None]:
    """Raise a full disk as DiskFull and an absent server as DatabaseUnavailable, naming the
    database at `where` (its `file` for SQLite); other errors pass as they are. The rest of
    Sift knows no SQLAlchemy."""
    try:
        yield
    except DBAPIError as exc:
        if disk_full(exc, file):
            raise no_room(where, exc) from exc
        if server_away(exc):
            raise DatabaseUnavailable(f"The database at {where} is unreachable: "
                                      f"{_first_line(exc)}") from exc
        raise


def no_room(where: str, exc: DBAPIError) -> DiskFull:
    return DiskFull(f"The disk under the database at {where} is full: nothing can be saved "
                    f"until room is made ({_first_line(exc)}).")


def disk_full(exc: DBAPIError, file: Path | None = None) -> bool:
    """SQLite or PostgreSQL said the disk is full; or SQLite's I/O failed on a disk without
    room (it cannot tell: the shared-memory file it maps is grown by writing to it)."""
    orig = exc.orig
    code = getattr(orig, "sqlite_errorcode", None)
    if code == SQLITE_FULL or getattr(orig, "sqlstate", None) == PG_DISK_FULL:
        return True
    return (code is not None and code & 0xFF == SQLITE_IOERR and file is not None
            and _free_bytes(file.parent) < NO_ROOM_BYTES)


def _free_bytes(folder: Path) -> int:
    try:
        stats = os.statvfs(folder)
    except OSError:
        return NO_ROOM_BYTES  # cannot tell: not called full
    return stats.f_bavail * stats.f_frsize


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
