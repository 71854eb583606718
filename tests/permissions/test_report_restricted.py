"""`sift report` data: restricted documents' titles and ids stay out unless asked for, on
SQLite and PostgreSQL, and the sync keeps the flag true to the document's access."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.report import RESTRICTED, ReportOptions, build_report
from storage.sync_state import SyncStateRepository
from sync.connectors.folder import FolderConnector
from sync.job import SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.storage.conftest import db_url  # noqa: F401
from tests.sync.conftest import HashEmbedder


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:  # noqa: F811
    database = Database(db_url)
    database.upgrade()
    yield database
    database.dispose()


async def test_never_retrieved_hides_restricted_ids_until_asked(db: Database,
                                                                tmp_path: Path) -> None:
    (tmp_path / "open.md").write_text("---\naccess: [public]\n---\n\n# Open\n\nText.\n")
    (tmp_path / "hr-layoffs.md").write_text("---\naccess: [hr]\n---\n\n# Plan\n\nText.\n")
    (tmp_path / "typo.md").write_text("---\nAccess: [public]\n---\n\n# Typo\n\nText.\n")
    state = SyncStateRepository(db)
    await SyncJob("kb", FolderConnector(tmp_path), MemoryIndex(), HashEmbedder(), state).run()
    hidden = build_report(db).never_retrieved
    assert sorted(d.doc_id for d in hidden) == [RESTRICTED, RESTRICTED, "open.md"]
    shown = build_report(db, ReportOptions(include_restricted=True)).never_retrieved
    assert sorted(d.doc_id for d in shown) == ["hr-layoffs.md", "open.md", "typo.md"]
    # A row from before migration 0006 counts as restricted; the next sync of the unchanged
    # file sets it right without re-indexing it.
    with db.write() as session:
        session.execute(text("UPDATE source_documents SET restricted = true "
                             "WHERE doc_id = 'open.md'"))
    assert "open.md" not in {d.doc_id for d in build_report(db).never_retrieved}
    summary = await SyncJob("kb", FolderConnector(tmp_path), MemoryIndex(), HashEmbedder(),
                            state).run()
    assert summary.counts.unchanged == 3 and summary.counts.chunks_written == 0
    assert sorted(d.doc_id for d in build_report(db).never_retrieved) == \
        [RESTRICTED, RESTRICTED, "open.md"]
