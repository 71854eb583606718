"""The database handle: engine, sessions and migrations for one URL (SQLite or PostgreSQL)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import InvalidatePoolError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from storage.errors import StorageError
from storage.faults import translated

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
DEFAULT_URL = "sqlite:///.sift/sift.db"
# The newest migration. A database stamped with it needs no Alembic at all, which keeps
# `sift ask` quick; a test holds this to storage/migrations (bump it with each new one).
HEAD = "0022"
MIGRATION_LOCK = 0x51F7  # the advisory lock id PostgreSQL migrations serialise on
# A pooled PostgreSQL connection unused for this long is pinged before it is handed out.
IDLE_PING_S = 2.0


def _sqlite_file(url: URL) -> Path | None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def _private_file(path: Path) -> None:
    """Create the database file readable by its owner only (it holds conversations), on first
    connect; SQLite gives its -wal and -shm files the same permissions."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's implicit transactions would defeat BEGIN IMMEDIATE below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # A writer takes the write lock up front: a deferred transaction that reads first
        # and writes later fails with SQLITE_BUSY instead of waiting under WAL.
        mode = connection.get_execution_options().get("sqlite_begin", "")
        connection.exec_driver_sql(f"BEGIN {mode}".strip())


def _ping_when_idle(engine: Engine, idle_s: float) -> None:
    """Ping a pooled connection before use only when it sat unused for `idle_s` or more.

    Connections die while they wait: a server restart, a proxy or firewall that drops quiet
    sessions. Pinging on every checkout (`pool_pre_ping`) finds those, but costs a round trip
    on each of an answer's nine transactions, while a connection busy a moment ago is all but
    certain to live. One that died anyway fails its statement, which makes SQLAlchemy discard
    every pooled connection opened before then, so the next transaction starts afresh.
    """

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info["returned_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _lent(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned_at = record.info.pop("returned_at", None)
        if returned_at is None or time.monotonic() - returned_at < idle_s:
            return  # a new connection, or one in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            # The pool replaces this connection and every one opened before it, then retries.
            raise InvalidatePoolError(f"a pooled connection was dead: {_first_line(exc)}") from exc


class Database:
    """Owns the engine for one URL; the composition root creates one and shares it."""

    def __init__(self, url: str = DEFAULT_URL, *, busy_timeout_ms: int = 15_000,
                 echo: bool = False, idle_ping_s: float = IDLE_PING_S) -> None:
        self.url = make_url(url)
        sqlite = self.url.get_backend_name() == "sqlite"
        if sqlite:
            path = _sqlite_file(self.url)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.engine = create_engine(self.url, echo=echo,
                                        connect_args={"check_same_thread": False})
            if path is not None:
                event.listen(self.engine, "do_connect", lambda *_: _private_file(path))
            _configure_sqlite(self.engine, busy_timeout_ms)
            writer = self.engine.execution_options(sqlite_begin="IMMEDIATE")
            reader = self.engine
        else:
            self.engine = create_engine(self.url, echo=echo)
            _ping_when_idle(self.engine, idle_ping_s)
            writer = self.engine.execution_options()
            # Reads need no transaction of their own: under PostgreSQL's default isolation
            # (read committed) each statement sees what was committed when it began, inside a
            # transaction or not, and without one a read costs one round trip instead of
            # three (BEGIN, the query, ROLLBACK).
            reader = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._reader = sessionmaker(reader, expire_on_commit=False)
        self._writer = sessionmaker(writer, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def file(self) -> Path | None:
        """The SQLite database's file; None for a server (PostgreSQL) or an in-memory one."""
        return _sqlite_file(self.url) if self.dialect == "sqlite" else None

    @property
    def safe_url(self) -> str:
        """The URL without its password, for messages and logs."""
        return self.url.render_as_string(hide_password=True)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only unit of work: rolled back at the end on SQLite; on PostgreSQL each
        statement runs on its own (no transaction), so nothing written here would be undone."""
        with translated(self.safe_url, self.file), self._reader() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One transaction: committed if the block succeeds, rolled back if it raises."""
        with translated(self.safe_url, self.file), self._writer.begin() as session:
            yield session

    @contextmanager
    def write_one(self) -> Iterator[Session]:
        """For a block that writes with a single statement, atomic on its own: on PostgreSQL
        it runs without BEGIN and COMMIT (one round trip instead of three); on SQLite, as
        `write()`. A block of several statements must use `write()`."""
        if self.dialect == "sqlite":
            with self.write() as session:
                yield session
        else:
            with translated(self.safe_url, self.file), self._reader() as session:
                yield session

    def ping(self) -> None:
        try:
            with self.engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            raise StorageError(f"Cannot reach the database at {self.safe_url}: "
                               f"{_first_line(exc)}") from exc

    def _alembic(self, connection: Connection) -> Config:
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        return config

    def upgrade(self, revision: str = "head") -> None:
        """Apply migrations up to `revision`; safe to call on every start."""
        if revision == "head" and self._stamped() == HEAD:
            return  # already current: the common case, without loading Alembic
        from alembic import command
        from alembic.util import CommandError

        engine = self.engine.execution_options(sqlite_begin="IMMEDIATE")
        before = self.current_revision_or_none()
        try:
            with translated(self.safe_url, self.file), engine.begin() as connection:
                if self.dialect == "postgresql":
                    # Replicas starting together: one migrates, the others wait then no-op.
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                                       {"key": MIGRATION_LOCK})
                command.upgrade(self._alembic(connection), revision)
        except (SQLAlchemyError, CommandError) as exc:
            # CommandError: e.g. a revision this code does not know (a newer Sift migrated it).
            raise StorageError(f"Could not migrate the database at {self.safe_url}: "
                               f"{_first_line(exc)}") from exc
        after = self.current_revision()
        if after != before:
            log.info("migrated the database at %s from %s to %s", self.safe_url,
                     before or "empty", after)

    def _stamped(self) -> str | None:
        """The revision recorded in the database, read without Alembic; None when unknown."""
        try:
            with self.engine.connect() as connection:
                found = connection.execute(text("SELECT version_num FROM alembic_version"))
                return found.scalar()
        except SQLAlchemyError:
            return None

    def current_revision_or_none(self) -> str | None:
        """The revision, or None when the database cannot be read (upgrade will say why)."""
        try:
            return self.current_revision()
        except SQLAlchemyError:
            return None

    def current_revision(self) -> str | None:
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    @staticmethod
    def _scripts() -> ScriptDirectory:
        from alembic.config import Config
        from alembic.script import ScriptDirectory

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        return ScriptDirectory.from_config(config)

    def head_revision(self) -> str | None:
        return self._scripts().get_current_head()

    def require_current(self) -> None:
        """Raise a clear error when the schema is missing or behind the code."""
        try:
            current = self.current_revision()
        except SQLAlchemyError as exc:
            raise StorageError(f"Cannot reach the database at {self.safe_url}: "
                               f"{_first_line(exc)}") from exc
        if current is not None and current not in {r.revision for r in
                                                   self._scripts().walk_revisions()}:
            raise StorageError(f"The database at {self.safe_url} is at revision {current}, "
                               "which this version of Sift does not know: was it migrated by "
                               "a newer Sift?")
        if current != self.head_revision():
            state = "has no Sift tables" if current is None else f"is at revision {current}"
            raise StorageError(f"The database at {self.safe_url} {state}: "
                               "run `sift db upgrade` first.")

    def dispose(self) -> None:
        self.engine.dispose()


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
