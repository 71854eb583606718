"""Storage fixtures: every repository test runs on a fresh SQLite file and a fresh PG schema."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

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


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    """A migrated database."""
    db = Database(db_url)
    db.upgrade()
    yield db
    db.dispose()


@pytest.fixture
def sqlite_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("db") / "sift.db")
