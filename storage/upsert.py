"""INSERT ... ON CONFLICT for SQLite and PostgreSQL: counters are added in SQL, never in Python."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import Insert


def insert_for(dialect: str, table: Table) -> Any:
    """The dialect's INSERT, which knows ON CONFLICT (both share that API)."""
    if dialect == "sqlite":
        return sqlite.insert(table)
    if dialect == "postgresql":
        return postgresql.insert(table)
    raise ValueError(f"upserts support sqlite and postgresql, not {dialect}")


def upsert(dialect: str, table: Table, *, keys: Sequence[str], add: Sequence[str] = (),
           replace: Sequence[str] = ()) -> Insert:
    """The statement to execute with the rows as parameters (`session.execute(stmt, rows)`):
    insert each row; on a key conflict add the `add` columns and overwrite the `replace` ones.

    The rows go as parameters, not as a VALUES list, so the statement compiles once and is
    cached (a VALUES list of N rows is a new statement to compile for every N: measured as a
    large share of `sift serve`'s CPU per answer). The increment is `column + excluded.column`,
    evaluated by the database under its row lock, so concurrent writers never lose an update.
    Callers pass rows sorted by key so that two transactions lock shared rows in the same order
    (no deadlocks on PostgreSQL).
    """
    return _built(dialect, table, tuple(keys), tuple(add), tuple(replace))


@lru_cache(maxsize=64)
def _built(dialect: str, table: Table, keys: tuple[str, ...], add: tuple[str, ...],
           replace: tuple[str, ...]) -> Insert:
    # Built once per shape and shared: statements are immutable, and building one copies every
    # column of the table into the `excluded` alias, a reference cycle per call that the
    # garbage collector then has to find (several per answer, ~0.2 ms of CPU each).
    stmt = insert_for(dialect, table)
    excluded = stmt.excluded
    changes = {name: table.c[name] + excluded[name] for name in add}
    changes.update({name: excluded[name] for name in replace})
    result: Insert = stmt.on_conflict_do_update(index_elements=[table.c[k] for k in keys],
                                                set_=changes)
    return result
