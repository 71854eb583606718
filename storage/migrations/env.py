"""Alembic environment: migrates the connection `Database.upgrade` hands in (or the ini's URL)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from storage.db import Database
from storage.models import Base


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite alters by copying
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    # `alembic -c storage/migrations/alembic.ini revision --autogenerate` during development.
    url = context.config.get_main_option("sqlalchemy.url") or "sqlite:///.sift/sift.db"
    with Database(url).engine.begin() as own:
        _run(own)


main()
