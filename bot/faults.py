"""Failures named for the person: a full disk and an unreachable database, in one sentence."""

from __future__ import annotations

import errno

from rag import messages
from rag.errors import PlatformRefused
from storage.errors import DatabaseUnavailable, DiskFull

NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})


def causes(exc: BaseException) -> list[BaseException]:
    """The error and what it was raised from or during, outermost first."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def disk_full(exc: BaseException) -> bool:
    """The database said its disk is full, or a file could not be written for want of room."""
    return any(isinstance(e, DiskFull) or (isinstance(e, OSError) and e.errno in NO_ROOM)
               for e in causes(exc))


def operator_sentence(exc: BaseException) -> str | None:
    """For the console and the CLI: the full disk or the unreachable database, named (the
    storage errors' messages say which database); None for any other failure."""
    for e in causes(exc):
        if isinstance(e, DiskFull | DatabaseUnavailable):
            return str(e)
        if isinstance(e, OSError) and e.errno in NO_ROOM:
            where = f" {e.filename}" if e.filename else " a file"
            return f"The disk is full: Sift could not write{where}; free some space and try again."
    return None


def failure_sentence(exc: BaseException) -> str:
    """What the person who asked or voted is told (the log has the cause)."""
    if disk_full(exc):
        return messages.DISK_FULL
    if any(isinstance(e, DatabaseUnavailable) for e in causes(exc)):
        return messages.DATABASE_DOWN
    refused = next((e for e in causes(exc) if isinstance(e, PlatformRefused)), None)
    return refused.user_message if refused is not None else messages.INTERNAL_ERROR
