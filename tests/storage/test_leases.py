"""Leases across processes on a real PostgreSQL: one holder, released on exit or on death."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import App
from bot.settings import Settings, SyncSettings
from storage.db import Database
from storage.leases import Lease, LeaseTaken, lease_key
from sync.lock import SyncBusy
from tests.fakes.memory_index import MemoryIndex

pytestmark = pytest.mark.postgres


@pytest.fixture
def two(postgres_url: str) -> Iterator[tuple[Database, Database]]:
    """Two engines on one database: two replicas, as far as PostgreSQL can tell."""
    first, second = Database(postgres_url), Database(postgres_url)
    yield first, second
    first.dispose()
    second.dispose()


def test_one_holder_at_a_time(two: tuple[Database, Database]) -> None:
    a, b = two
    with Lease(a, "sync:wiki"):
        with pytest.raises(LeaseTaken, match="sync:wiki"):
            Lease(b, "sync:wiki").acquire()
        with Lease(b, "sync:handbook"):  # another name is another lease
            pass
    with Lease(b, "sync:wiki"):  # released on exit
        pass


def test_a_holder_that_dies_releases_the_lease(two: tuple[Database, Database]) -> None:
    a, b = two
    Lease(a, "sync:wiki").acquire()  # never released by hand
    a.dispose()  # the process goes away: its connections close
    with Lease(b, "sync:wiki"):
        pass


def test_keys_are_stable_and_distinct() -> None:
    assert lease_key("sync:wiki") == lease_key("sync:wiki")
    assert lease_key("sync:wiki") != lease_key("sync:wik1")
    assert -(2**63) <= lease_key("sync:wiki") < 2**63


def test_sqlite_has_no_leases(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="PostgreSQL"):
        Lease(Database(f"sqlite:///{tmp_path / 'x.db'}"), "sync:wiki")


async def test_a_replica_skips_a_sync_another_replica_runs(postgres_url: str,
                                                           tmp_path: Path) -> None:
    app = App(Settings(data_dir=tmp_path, database_url=postgres_url,
                       sync=SyncSettings(sync_on_start=False)))
    app.database.upgrade()
    index = MemoryIndex()
    runner = app.sync_runner(index)
    other = Database(postgres_url)
    try:
        with Lease(other, "sync:sample"), pytest.raises(SyncBusy) as busy:
            await runner.run("sample")
        assert "Another Sift replica is syncing 'sample'" in busy.value.user_message
        assert index.chunks == {}  # nothing read, nothing written
    finally:
        other.dispose()
        app.database.dispose()


def test_replicas_share_one_quota(two: tuple[Database, Database]) -> None:
    """Two replicas admitting the same person at once never pass the limit together."""
    from concurrent.futures import ThreadPoolExecutor

    from storage.quota import QuotaRepository

    for db in two:
        db.upgrade()
    replicas = [QuotaRepository(db) for db in two]
    with ThreadPoolExecutor(8) as pool:
        allowed = list(pool.map(lambda n: replicas[n % 2].allow("U-busy", 5, 60), range(16)))
    assert allowed.count(True) == 5
