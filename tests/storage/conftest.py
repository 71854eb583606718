"""Storage fixtures: every repository test runs on a fresh SQLite file and a fresh PG schema."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

from storage.db import Database

BACKENDS = [pytest.param("sqlite", id="sqlite"),
            pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)]


def _pg_schema_url(base: str, schema: str) -> str:
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[str]:
    """An empty database: a new SQLite file, or a new schema in the session's PostgreSQL."""
    with empty_database(request, request.param, tmp_path_factory) as url:
        yield url


@contextmanager
def empty_database(request: pytest.FixtureRequest, backend: str,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'sift.db'}"
        return
    base = request.getfixturevalue("postgres_url")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield _pg_schema_url(base, schema)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated to the head once per worker, which each test then copies: the
    migrations have their own tests (test_migrations.py), and running them for each of
    hundreds of tests was most of the storage tests' CPU time."""
    path = tmp_path_factory.mktemp("migrated") / "sift.db"
    db = Database(f"sqlite:///{path}")
    db.upgrade()
    with db.engine.connect() as connection:  # everything into the main file, none in -wal
        connection.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
    db.dispose()
    return path


@pytest.fixture
def database(db_url: str, request: pytest.FixtureRequest) -> Iterator[Database]:
    """A migrated database."""
    if db_url.startswith("sqlite:///"):
        shutil.copyfile(request.getfixturevalue("migrated_sqlite"),
                        db_url.removeprefix("sqlite:///"))
    db = Database(db_url)
    db.upgrade()  # a no-op on the copy (it is at the head), the migration on PostgreSQL
    yield db
    db.dispose()


@pytest.fixture
def sqlite_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("db") / "sift.db")
