"""What the person and the operator are told about a failure, by its cause."""

from __future__ import annotations

import errno

import pytest

from bot.faults import failure_sentence, operator_sentence
from rag import messages
from storage.errors import DatabaseUnavailable, DiskFull


def raised_from(outer: Exception, cause: BaseException) -> Exception:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise outer from inner
    except Exception as caught:
        return caught


FULL = DiskFull("The disk under the database at sqlite:////x/sift.db is full.")
AWAY = DatabaseUnavailable("The database at postgresql://db/sift is unreachable: refused")
NO_SPACE = OSError(errno.ENOSPC, "No space left on device", "/data/locks/sync-kb.lock")


@pytest.mark.parametrize(("exc", "person", "operator"), [
    (FULL, messages.DISK_FULL, str(FULL)),
    (raised_from(RuntimeError("wrapped"), FULL), messages.DISK_FULL, str(FULL)),
    (NO_SPACE, messages.DISK_FULL,
     "The disk is full: Sift could not write /data/locks/sync-kb.lock; free some space and "
     "try again."),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), messages.DISK_FULL,
     "The disk is full: Sift could not write a file; free some space and try again."),
    (AWAY, messages.DATABASE_DOWN, str(AWAY)),
    (OSError(errno.EACCES, "Permission denied"), messages.INTERNAL_ERROR, None),
    (ValueError("bug"), messages.INTERNAL_ERROR, None),
])
def test_sentences_by_cause(exc: Exception, person: str, operator: str | None) -> None:
    assert failure_sentence(exc) == person
    assert operator_sentence(exc) == operator
