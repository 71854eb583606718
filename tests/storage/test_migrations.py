"""Migrations produce exactly the models' schema, on SQLite and PostgreSQL, from any directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from storage.db import HEAD, Database
from storage.errors import StorageError
from storage.models import Base


def _drift(db: Database) -> list[object]:
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def test_migrations_match_the_models(database: Database) -> None:
    assert _drift(database) == []
    assert database.current_revision() == database.head_revision()


def test_the_drift_check_sees_a_missing_index(database: Database) -> None:
    # Proves the comparison above is not vacuous.
    with database.engine.begin() as connection:
        connection.execute(text("DROP INDEX ix_interactions_status"))
    diffs = _drift(database)
    assert len(diffs) == 1
    assert "ix_interactions_status" in repr(diffs[0])


def test_upgrade_twice_is_a_no_op(database: Database) -> None:
    database.upgrade()
    assert set(inspect(database.engine).get_table_names()) >= {
        "interactions", "interaction_sources", "feedback", "document_stats", "grade_cache",
        "sync_runs", "source_documents", "event_keys", "conversation_turns", "alembic_version"}


def test_0002_keeps_existing_interactions_without_an_arm(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade("0001")
    with db.engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO interactions (created_at, platform, workspace, channel, thread, "
            "user_id, correlation_id, question, search_query, answer, status, mode, "
            "timings_ms, usage, models) VALUES (CURRENT_TIMESTAMP, 'slack', '', '', '', '', "
            "'', 'q', '', 'a', 'answered', 'fast', '{}', '{}', '{}')"))
    db.upgrade()
    with db.engine.connect() as connection:
        rows = connection.execute(text("SELECT question, mode, ab_arm FROM interactions"))
        assert [tuple(r) for r in rows] == [("q", "fast", "")]
    assert _drift(db) == []
    db.dispose()


def test_require_current_names_the_fix_on_an_empty_database(db_url: str) -> None:
    db = Database(db_url)
    with pytest.raises(StorageError, match="has no Sift tables: run `sift db upgrade`"):
        db.require_current()
    db.upgrade()
    db.require_current()
    db.dispose()


def test_sqlite_file_in_a_new_directory_from_another_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = Database("sqlite:///nested/dir/sift.db")
    db.upgrade()
    assert (tmp_path / "nested" / "dir" / "sift.db").exists()
    with db.engine.connect() as connection:
        pragmas = {name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                   for name in ("journal_mode", "foreign_keys", "busy_timeout")}
    assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 15000}
    db.dispose()
    assert os.getcwd() == str(tmp_path)


def test_unreachable_database_is_a_clear_error_without_the_password() -> None:
    db = Database("postgresql+psycopg://sift:hunter2@127.0.0.1:1/sift?connect_timeout=2")
    with pytest.raises(StorageError) as caught:
        db.ping()
    assert "Cannot reach the database at postgresql+psycopg://sift:***@127.0.0.1:1/sift" in str(
        caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_database_from_a_newer_sift_is_a_clear_error(database: Database) -> None:
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(StorageError, match=r"Could not migrate the database at .*'9999'"):
        database.upgrade()
    with pytest.raises(StorageError,
                       match="is at revision 9999, which this version of Sift does not know"):
        database.require_current()


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual default, which would leave the file world-readable
    try:
        database = Database(f"sqlite:///{tmp_path / 'new' / 'sift.db'}")
        database.upgrade()
        with database.write() as session:
            session.execute(text("SELECT 1"))
    finally:
        os.umask(old)
    files = [tmp_path / "new" / n for n in ("sift.db", "sift.db-wal", "sift.db-shm")]
    assert {f.name: oct(f.stat().st_mode & 0o777) for f in files if f.exists()} == {
        "sift.db": "0o600", "sift.db-wal": "0o600", "sift.db-shm": "0o600"}
    assert oct((tmp_path / "new").stat().st_mode & 0o777) == "0o700"


def test_the_head_constant_is_the_newest_migration(database: Database) -> None:
    # HEAD lets a current database skip Alembic; a migration added without bumping it fails here.
    newest = database.head_revision()
    assert newest == HEAD, f"set HEAD in storage/db.py to {newest!r}, the newest migration"


def test_a_current_database_is_checked_without_loading_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sift.db'}"
    Database(url).upgrade()
    probe = ("import sys; from storage.db import Database; Database(sys.argv[1]).upgrade(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))")
    done = subprocess.run([sys.executable, "-c", probe, url], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"
    with Database(url).engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == HEAD
