"""A copy of Sift's database into one file, and back: SQLite's online backup, or pg_dump."""

from __future__ import annotations

import glob
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy.engine import URL

from storage.db import Database
from storage.errors import StorageError

TIMEOUT_S = 3600.0


def dump_name(db: Database) -> str:
    return "database.sqlite" if db.dialect == "sqlite" else "database.pgdump"


def dump(db: Database, target: Path) -> Path:
    """Write the whole database to `target` (a consistent snapshot while Sift runs)."""
    if db.dialect == "sqlite":
        source = sqlite3.connect(_sqlite_path(db.url))
        try:
            with sqlite3.connect(target) as copy:
                source.backup(copy)
        finally:
            source.close()
        return target
    _pg("pg_dump", db.url, "--format=custom", "--no-owner", "--no-privileges",
        f"--file={target}")
    return target


def restore(db: Database, source: Path) -> None:
    """Load a dump into an empty database (refused when it already holds Sift's tables)."""
    if db.current_revision() is not None:
        raise StorageError(f"The database at {db.safe_url} already holds Sift's tables: "
                           "restore into a new, empty database.")
    if db.dialect == "sqlite":
        with sqlite3.connect(source) as dumped, sqlite3.connect(_sqlite_path(db.url)) as into:
            dumped.backup(into)
        return
    _pg("pg_restore", db.url, "--no-owner", "--no-privileges", "--exit-on-error",
        f"--dbname={_libpq(db.url)[0]}", str(source), dbname_flag=True)


def _sqlite_path(url: URL) -> str:
    return str(url.database or "")


def _libpq(url: URL) -> tuple[str, dict[str, str]]:
    """The URL for libpq tools without the password, which goes in PGPASSWORD instead (an
    argument would show in every process listing)."""
    plain = url.set(drivername="postgresql", password=None)
    env = {"PGPASSWORD": url.password} if url.password else {}
    return plain.render_as_string(hide_password=False), env


def pg_tool(name: str) -> str:
    """pg_dump or pg_restore: on PATH, else the newest Debian server's (as new as the server
    it talks to, which pg_dump needs)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    tool = found[-1] if found else shutil.which(name)
    if tool is None:
        raise StorageError(f"{name} is not installed: install PostgreSQL's client tools "
                           "(apt-get install postgresql-client) to back up or restore.")
    return tool


def _pg(name: str, url: URL, *args: str, dbname_flag: bool = False) -> None:
    target, env = _libpq(url)
    command = [pg_tool(name), *args] if dbname_flag else [pg_tool(name), *args, target]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S,
                          env={**os.environ, **env})
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise StorageError(f"{name} failed for {url.render_as_string(hide_password=True)}: "
                           f"{last}")
