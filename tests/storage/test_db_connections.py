"""PostgreSQL connections: reads without a transaction, writes in one, dead pooled ones replaced."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from storage.db import Database
from storage.errors import DatabaseUnavailable

pytestmark = pytest.mark.postgres

XACT = text("SELECT pg_current_xact_id()")  # assigns a transaction id if none is yet
BACKEND = text("SELECT pg_backend_pid()")


@pytest.fixture
def pg_db_url(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.storage.conftest import empty_database

    with empty_database(request, "postgres", tmp_path_factory) as url:
        yield url


def _kill(postgres_url: str, pid: int) -> None:
    """What a server restart or a proxy dropping a quiet session does to one connection."""
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            assert connection.execute(text("SELECT pg_terminate_backend(:pid)"),
                                      {"pid": pid}).scalar() is True
    finally:
        admin.dispose()


def _pid(db: Database) -> int:
    with db.read() as session:
        return int(session.execute(BACKEND).scalar_one())


def test_each_statement_of_a_read_is_its_own_transaction(pg_db_url: str) -> None:
    db = Database(pg_db_url)
    try:
        with db.read() as session:
            first, second = (session.execute(XACT).scalar() for _ in range(2))
        assert first != second
    finally:
        db.dispose()


def test_a_write_is_one_transaction_even_on_a_connection_a_read_used(pg_db_url: str) -> None:
    db = Database(pg_db_url)
    try:
        with db.write() as session:
            session.execute(text("CREATE TABLE notes (body text)"))
        pid = _pid(db)  # the pool's one connection, last lent to a read
        with db.write() as session:
            assert session.execute(BACKEND).scalar() == pid
            first, second = (session.execute(XACT).scalar() for _ in range(2))
        assert first == second
        with pytest.raises(RuntimeError), db.write() as session:
            session.execute(text("INSERT INTO notes VALUES ('half-written')"))
            raise RuntimeError("the block failed after its first statement")
        with db.read() as session:
            assert session.execute(text("SELECT count(*) FROM notes")).scalar() == 0
    finally:
        db.dispose()


def test_a_connection_killed_while_it_sat_idle_is_replaced_before_use(
        pg_db_url: str, postgres_url: str) -> None:
    db = Database(pg_db_url, idle_ping_s=0.0)  # every connection counts as idle: pinged
    try:
        dead = _pid(db)
        _kill(postgres_url, dead)
        assert _pid(db) != dead  # answered, on a new connection
    finally:
        db.dispose()


def test_a_connection_in_use_a_moment_ago_is_not_pinged_and_fails_once(
        pg_db_url: str, postgres_url: str) -> None:
    db = Database(pg_db_url, idle_ping_s=3600.0)  # nothing counts as idle: never pinged
    try:
        dead = _pid(db)
        _kill(postgres_url, dead)
        with pytest.raises(DatabaseUnavailable, match="unreachable: terminating connection"):
            _pid(db)  # a dropped connection reads as the server gone, which a retry may mend
        # That failure discarded the pool: the next transaction gets a live connection.
        assert _pid(db) != dead
    finally:
        db.dispose()


def test_a_single_statement_write_commits_as_it_runs(pg_db_url: str) -> None:
    db = Database(pg_db_url)
    others = create_engine(pg_db_url)
    try:
        with db.write() as session:
            session.execute(text("CREATE TABLE notes (body text)"))
        with db.write_one() as session:
            session.execute(text("INSERT INTO notes VALUES ('claimed')"))
            # No transaction around it: another connection sees the row before the block ends.
            with others.connect() as connection:
                assert connection.execute(text("SELECT body FROM notes")).scalars().all() == [
                    "claimed"]
    finally:
        others.dispose()
        db.dispose()
