"""A full disk under the database is DiskFull, naming the database, however SQLite says it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.errors import DiskFull
from tests.disk import SmallDisk


def test_sqlite_full_is_disk_full(tmp_path: Path) -> None:
    """SQLITE_FULL without any mount: the file may not grow past the pages it has."""
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()

    @event.listens_for(db.engine, "connect")
    def _no_growth(dbapi_connection: Any, _record: Any) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    db.engine.dispose()  # new connections, each with the limit
    claims = DedupeRepository(db)
    with pytest.raises(DiskFull) as full:
        for n in range(10_000):
            claims.claim(f"event-{n}-" + "x" * 200, 60)
    assert str(full.value).startswith(
        f"The disk under the database at sqlite:///{tmp_path / 'sift.db'} is full")
    db.dispose()


def test_opening_a_database_on_a_full_disk_is_disk_full(small_disk: SmallDisk) -> None:
    """Closed cleanly, a database reopened on a full disk cannot create its shared-memory
    file: SQLite calls that a disk I/O error; every command starts with this upgrade check."""
    url = f"sqlite:///{small_disk.path / 'sift.db'}"
    first = Database(url)
    first.upgrade()
    first.dispose()  # the last connection closes: SQLite removes the -wal and -shm files
    assert sorted(p.name for p in small_disk.path.iterdir()) == ["sift.db"]
    small_disk.fill()
    with pytest.raises(DiskFull, match="is full"):
        Database(url).upgrade()
