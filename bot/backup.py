"""`sift db backup|restore`: the database and the Weaviate collection, into one folder and back."""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from bot.runtime import ManagedRun, weaviate_running
from rag.errors import SiftError
from rag.index import WeaviateIndex
from storage import backup as database_backup
from storage.columns import utc_now
from storage.db import Database
from weaviate_server.process import backup_dir

MANIFEST = "sift-backup.json"


@dataclass(frozen=True)
class Manifest:
    """What a backup folder holds: the database file, and Weaviate's backup of the collection
    (its files copied into `weaviate/` when Sift manages the server)."""

    created_at: str
    database: str  # the dump's file name in the folder
    revision: str  # the schema revision it was taken at
    collection: str
    weaviate_backup: str  # Weaviate's backup id
    weaviate_files: bool  # the backup's files are in the folder (a managed server)

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        try:
            return cls(**json.loads((folder / MANIFEST).read_text()))
        except (OSError, ValueError, TypeError) as exc:
            raise SiftError(f"no readable {MANIFEST} in {folder}: {exc}", user_message=(
                f"{folder} is not a Sift backup (no readable {MANIFEST}).")) from exc


async def backup(db: Database, run: ManagedRun, index: WeaviateIndex,
                 folder: Path) -> Manifest:
    """Dump the database, then have Weaviate back the collection up (and copy its files
    here when Sift runs that Weaviate). The folder must be new or empty."""
    if folder.exists() and any(folder.iterdir()):
        raise SiftError(f"{folder} is not empty", user_message=(
            f"{folder} already holds files: back up into a new folder."))
    folder.mkdir(parents=True, exist_ok=True)
    revision = await asyncio.to_thread(db.current_revision) or ""
    name = database_backup.dump_name(db)
    await asyncio.to_thread(database_backup.dump, db, folder / name)
    backup_id = "sift-" + utc_now().strftime("%Y%m%d-%H%M%S-%f")
    async with weaviate_running(run, announce=False):
        await index.connect(ensure=False)
        try:
            await index.backup(backup_id)
        finally:
            await index.close()
    managed = run.managed
    if managed is not None:
        await asyncio.to_thread(shutil.copytree, backup_dir(managed.data_dir) / backup_id,
                                folder / "weaviate" / backup_id)
    manifest = Manifest(utc_now().isoformat(), name, revision, index.config.collection,
                        backup_id, managed is not None)
    (folder / MANIFEST).write_text(json.dumps(asdict(manifest), indent=2) + "\n")
    return manifest


async def restore(db: Database, run: ManagedRun, index: WeaviateIndex,
                  folder: Path) -> Manifest:
    """Into an empty database and a Weaviate without the collection: the database first
    (refused if it holds Sift's tables), then the collection."""
    manifest = Manifest.read(folder)
    managed = run.managed
    if managed is not None:
        if not manifest.weaviate_files:
            raise SiftError("the backup holds no Weaviate files", user_message=(
                f"{folder} was taken from a Weaviate Sift does not run: copy the backup "
                f"{manifest.weaviate_backup} into that server's BACKUP_FILESYSTEM_PATH and "
                "set SIFT_WEAVIATE_URL to it."))
        target = backup_dir(managed.data_dir) / manifest.weaviate_backup
        if not target.exists():
            await asyncio.to_thread(shutil.copytree,
                                    folder / "weaviate" / manifest.weaviate_backup, target)
    await asyncio.to_thread(database_backup.restore, db, folder / manifest.database)
    async with weaviate_running(run, announce=False):
        await index.connect(ensure=False)
        try:
            await index.restore(manifest.weaviate_backup)
        finally:
            await index.close()
    return manifest
