"""`sift db upgrade|purge|backup|restore`: migrate, trim, copy out and bring back the data."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from rag.errors import SiftError
from storage.errors import StorageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "db", help="migrate the database or purge old history",
        description="Sift keeps interactions, feedback, document statistics, the grade cache "
        "and sync state in SIFT_DATABASE_URL (default: SQLite in $SIFT_DATA_DIR/sift.db).")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser(
        "upgrade", help="create or migrate the schema (`sift serve` also does this on start)"
    ).set_defaults(handler=_upgrade)
    purge = actions.add_parser(
        "purge", help="delete interactions, their sources and feedback, chat history and old "
        "sync runs older than a duration; document statistics are kept",
        description="Delete personal history older than DURATION. Document statistics are "
        "lifetime totals without personal data and are kept; expired grade-cache entries "
        "and dedupe keys go too.")
    purge.add_argument("--older-than", required=True, type=duration, metavar="DURATION",
                       help="age to keep, e.g. 90d, 12h or 2w")
    purge.set_defaults(handler=_purge)
    made = actions.add_parser(
        "backup", help="copy the database and the Weaviate collection into a new folder",
        description="A consistent dump of the database (SQLite's online backup, or pg_dump) "
        "and a Weaviate backup of the collection through its filesystem module; with the "
        "Weaviate Sift manages, the backup's files are copied into FOLDER too.")
    made.add_argument("folder", type=Path, metavar="FOLDER", help="a new or empty folder")
    made.set_defaults(handler=_backup)
    back = actions.add_parser(
        "restore", help="restore a `sift db backup` folder into an empty database and Weaviate",
        description="The database is restored into SIFT_DATABASE_URL, which must be empty "
        "(a new database), then the collection into Weaviate, which must not hold it.")
    back.add_argument("folder", type=Path, metavar="FOLDER", help="what `sift db backup` wrote")
    back.set_defaults(handler=_restore)


def duration(text: str) -> timedelta:
    """argparse type: a bad duration is a usage error naming the accepted forms."""
    from storage.retention import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def cli_actor() -> str:
    """Who the audit log names for a change made from the command line."""
    import getpass

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name for this uid (some containers)
        return f"cli:uid {os.getuid()}"


@contextmanager
def storage_errors() -> Iterator[None]:
    """Storage speaks in its own errors; the CLI shows them as one sentence."""
    try:
        yield
    except StorageError as exc:
        raise SiftError(str(exc), user_message=str(exc)) from exc


def _upgrade(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings

    db = App(load_settings(args.config)).database
    with storage_errors():
        db.ping()  # an unreachable server is one clear sentence, not a migration traceback
        before = db.current_revision()
        db.upgrade()
        after = db.current_revision()
    if before == after:
        print(f"Database {db.safe_url} is up to date (revision {after}).")
    else:
        print(f"Database {db.safe_url} migrated from {before or 'empty'} to revision {after}.")
    return 0


def human(age: timedelta) -> str:
    seconds = int(age.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"


def _purge(args: argparse.Namespace) -> int:
    from bot.app import App, load_settings

    app = App(load_settings(args.config))
    with storage_errors():
        app.database.require_current()
        counts = app.retention.purge(args.older_than)
        expired = app.grade_cache.expire()
    rows = [("interactions", counts.interactions), ("retrieved sources", counts.sources),
            ("feedback", counts.feedback), ("conversation turns", counts.conversation_turns),
            ("sync runs", counts.sync_runs), ("dedupe keys", counts.event_keys),
            ("grade-cache entries", counts.grades + expired),
            ("help questions", counts.help_questions),
            ("rejected drafts", counts.rejected_drafts)]
    print(f"Purged what is older than {human(args.older_than)} from {app.database.safe_url}:")
    for name, count in rows:
        print(f"  {name.ljust(20)} {count}")
    print("Document statistics and the learned ranking's daily tallies are kept (counts, "
          "no personal data).")
    return 0


def _backup(args: argparse.Namespace) -> int:
    import asyncio

    from bot.app import App, load_settings
    from bot.backup import backup

    app = App(load_settings(args.config))
    with storage_errors():
        app.database.require_current()
        made = asyncio.run(backup(app.database, app.weaviate_run, app.index(), args.folder))
    print(f"Backed up {app.database.safe_url} (revision {made.revision}) and the Weaviate "
          f"collection {made.collection} (backup {made.weaviate_backup}) into {args.folder}.")
    if not made.weaviate_files:
        print("The Weaviate backup's files stay on that server, in its BACKUP_FILESYSTEM_PATH "
              f"(folder {made.weaviate_backup}): copy them along with this folder.")
    return 0


def _restore(args: argparse.Namespace) -> int:
    import asyncio

    from bot.app import App, load_settings
    from bot.backup import restore

    app = App(load_settings(args.config))
    with storage_errors():
        made = asyncio.run(restore(app.database, app.weaviate_run, app.index(), args.folder))
    print(f"Restored the database (revision {made.revision}) into {app.database.safe_url} "
          f"and the collection {made.collection} into Weaviate.")
    return 0
