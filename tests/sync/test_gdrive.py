"""The Google Drive connector through the sync job, against a fake Drive API v3."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rag.errors import ConfigError, SyncError
from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.gdrive import GDriveConnector, GDriveSettings, build
from sync.connectors.gdrive_api import access_of
from sync.job import JobConfig, SyncJob
from tests.fakes.gdrive_server import (
    DOC,
    FOLDER,
    SHEET,
    SLIDES,
    DriveFile,
    FakeDrive,
    permission,
)
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble
from tests.sync.harness import SpyIndex, snapshot
from tests.sync.pdf import make_pdf

PDF = "application/pdf"


def now() -> str:
    """A modifiedTime after the last run's start (which the query truncates to seconds)."""
    return (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def fill(server: FakeDrive) -> None:
    server.put(DriveFile("d1", "Travel policy", DOC, b"<html><body><h1>Travel</h1><p>Book "
                         b"trains for trips under four hours.</p></body></html>",
                         [permission("domain", "acme.com")]))
    server.put(DriveFile("s1", "Price list", SHEET, b"Plan,Monthly\r\nStarter,10\r\nTeam,45\r\n",
                         [permission("anyone")]))
    server.put(DriveFile("p1", "Onboarding deck", SLIDES, b"Welcome aboard\n\nDay one: laptop.",
                         [permission("group", "HR@acme.com"), permission("user", "bo@acme.com",
                                                                          "writer")]))
    server.put(DriveFile("f1", "Security.pdf", PDF, make_pdf(["Rotate keys quarterly."]),
                         [permission("user", "ana@acme.com", "owner")], drive="0AShared"))
    server.put(DriveFile("x1", "Projects", FOLDER, b"", [permission("anyone")]))


@pytest.fixture
async def drive(tmp_path: Path) -> AsyncIterator[FakeDrive]:
    server = FakeDrive()
    fill(server)
    await server.start()
    yield server
    await server.stop()


def settings(server: FakeDrive, tmp_path: Path, **overrides: Any) -> GDriveSettings:
    key = overrides.pop("key_file", None) or server.key_file(tmp_path)
    return GDriveSettings(**{"key_file": key, "page_size": 2, "backoff_s": 0.01,
                             "max_wait_s": 2.0, **overrides})


class Account:
    def __init__(self, server: FakeDrive, tmp_path: Path, **overrides: Any) -> None:
        self.server = server
        self.connector = build(SourceConfig("gd", url=server.url),
                               settings(server, tmp_path, **overrides))
        self.index, self.state = SpyIndex(MemoryIndex()), MemorySyncState()

    async def sync(self, full: bool = False) -> Any:
        job = SyncJob("gd", self.connector, self.index, HashEmbedder(), self.state,
                      JobConfig(embed_batch=4, checkpoint_overlap_s=0))
        return await job.run(full=full)

    async def bodies(self) -> dict[str, str]:
        return {row[0]: row[3] for row in (await snapshot(self.index)).values()}


async def test_docs_sheets_slides_and_files_are_indexed_with_access(drive: FakeDrive,
                                                                    tmp_path: Path) -> None:
    account = Account(drive, tmp_path)
    first = await account.sync()
    assert (first.counts.added, first.counts.failed) == (4, 0)  # the folder is no document
    bodies = await account.bodies()
    assert "Book trains for trips under four hours." in bodies["d1"]
    assert "| Starter | 10 |" in bodies["s1"] and "Day one: laptop." in bodies["p1"]
    assert "Rotate keys quarterly." in bodies["f1"]
    docs = {d.doc_id: d async for d in account.connector.documents(None)
            if isinstance(d, SourceDocument)}
    assert docs["d1"].access == ("gdrive:domain:acme.com",)
    assert docs["s1"].access == ("public",)
    assert docs["p1"].access == ("gdrive:group:hr@acme.com", "gdrive:user:bo@acme.com")
    assert docs["f1"].access == ("gdrive:user:ana@acme.com",)
    assert docs["d1"].doc_type == "document" and docs["d1"].authors == ("Bo Chen", "Ana Lima")


async def test_shared_drives_are_read_one_by_one(drive: FakeDrive, tmp_path: Path) -> None:
    account = Account(drive, tmp_path, drives=["0AShared"])
    summary = await account.sync()
    assert set(await account.bodies()) == {"f1"} and summary.counts.added == 1
    lists = [r for r in drive.requests if r.startswith("/drive/v3/files?")]
    assert lists and all("driveId=0AShared" in r and "corpora=drive" in r for r in lists)


async def test_updates_trash_and_deletion_reach_the_index(drive: FakeDrive,
                                                          tmp_path: Path) -> None:
    account = Account(drive, tmp_path)
    await account.sync()
    writes = list(account.index.writes)
    again = await account.sync()
    assert (again.counts.added, again.counts.updated, again.counts.deleted) == (0, 0, 0)
    assert account.index.writes == writes
    assert any("modifiedTime+%3E" in r or "modifiedTime > " in r for r in drive.requests)
    drive.put(DriveFile("d1", "Travel policy", DOC, b"<p>Planes only beyond six hours.</p>",
                        [permission("domain", "acme.com")], modified=now()))
    drive.files["p1"].trashed = True  # trashing does not touch modifiedTime
    drive.put(DriveFile("s1", "Price list", SHEET, b"a,b\r\n1,2\r\n", [permission("anyone")],
                        modified=now(), trashed=True))  # edited, then trashed
    changed = await account.sync()
    assert (changed.counts.updated, changed.counts.deleted) == (1, 2)
    bodies = await account.bodies()
    assert set(bodies) == {"d1", "f1"} and "Planes only beyond six hours." in bodies["d1"]


async def test_a_failed_export_and_a_file_too_large_are_reported_by_name(
        drive: FakeDrive, tmp_path: Path) -> None:
    account = Account(drive, tmp_path)
    await account.sync()
    before = await snapshot(account.index)
    drive.export_fails.add("d1")
    drive.put(DriveFile("d1", "Travel policy", DOC, b"<p>new</p>", [permission("anyone")],
                        modified=now()))
    drive.put(DriveFile("big", "Archive scan.pdf", PDF, b"%PDF", [permission("anyone")],
                        modified=now(), size=70 * 2**20))
    summary = await account.sync()
    assert summary.counts.failed == 2 and summary.counts.added == 0
    errors = " ".join(summary.errors)
    assert "Travel policy" in errors and "too large to be exported" in errors
    assert "Archive scan.pdf" in errors and "`gdrive.max_file_mb`" in errors
    assert not any(r.startswith("/drive/v3/files/big?alt=media") for r in drive.requests)
    assert await snapshot(account.index) == before  # d1 keeps its previous version


async def test_a_revoked_key_is_one_sentence_naming_the_source_and_setting(
        drive: FakeDrive, tmp_path: Path) -> None:
    account = Account(drive, tmp_path)
    drive.keys.clear()  # the key was deleted in the Cloud console
    with pytest.raises(SyncError) as caught:
        await account.sync()
    message = caught.value.user_message
    assert message.startswith("Source 'gd' (Google Drive)") and "`gdrive.key_file`" in message
    assert "invalid_grant" in message and "PRIVATE KEY" not in message
    assert account.index.writes == [] and account.state.writes == 0


async def test_a_token_expiring_mid_run_is_renewed_and_the_run_completes(
        drive: FakeDrive, tmp_path: Path) -> None:
    drive.expire_after = 3  # the hour-long access token ends while the first pass reads
    summary = await Account(drive, tmp_path).sync()
    assert (summary.counts.added, summary.counts.failed) == (4, 0)
    assert drive.tokens_issued == 3  # the run's, its renewal, the id listing's own session


async def test_a_key_revoked_mid_run_stops_it_naming_the_setting(drive: FakeDrive,
                                                                 tmp_path: Path) -> None:
    account = Account(drive, tmp_path)
    keys = dict(drive.keys)
    drive.expire_after, drive.on_expiry = 3, drive.keys.clear  # deleted while the run reads
    with pytest.raises(SyncError) as caught:
        await account.sync()
    assert caught.value.user_message.startswith("Source 'gd' (Google Drive)")
    assert "`gdrive.key_file`" in caught.value.user_message
    assert account.state.runs[-1].status == "failed"
    drive.keys.update(keys)
    again = await account.sync()
    assert (again.counts.added, again.counts.failed) == (4, 0)


def test_a_missing_or_wrong_key_file_is_refused_at_configuration(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        build(SourceConfig("gd"), GDriveSettings(key_file=tmp_path / "nope.json"))
    assert "`gdrive.key_file`" in missing.value.user_message
    other = tmp_path / "user.json"
    other.write_text('{"type": "authorized_user", "client_id": "x"}', encoding="utf-8")
    with pytest.raises(ConfigError) as wrong:
        build(SourceConfig("gd"), GDriveSettings(key_file=other))
    assert "not a service account key" in wrong.value.user_message
    with pytest.raises(ConfigError) as unset:
        build(SourceConfig("gd"), GDriveSettings())
    assert "`gdrive.key_file`" in unset.value.user_message


@pytest.mark.parametrize(("permissions", "expected"), [
    ([permission("anyone")], ("public",)),
    ([permission("domain", "Acme.com"), permission("user", "Ana@acme.com")],
     ("gdrive:domain:acme.com", "gdrive:user:ana@acme.com")),
    ([{**permission("group", "hr@acme.com"), "deleted": True}], ()),
    ([{"kind": "drive#permission", "id": "9", "type": "user", "role": "reader"}], ()),
    ([], ()),
])
def test_permissions_map_to_principals(permissions: list[dict[str, Any]],
                                       expected: tuple[str, ...]) -> None:
    assert access_of(permissions) == expected


async def test_the_connector_is_a_cheap_lister(drive: FakeDrive, tmp_path: Path) -> None:
    connector = build(SourceConfig("gd", url=drive.url), settings(drive, tmp_path))
    assert isinstance(connector, GDriveConnector) and connector.cheap_ids
    assert await connector.list_ids() == {"d1", "s1", "p1", "f1", "x1"}


async def test_an_export_past_the_size_limit_is_stopped_as_it_downloads(
        drive: FakeDrive, tmp_path: Path) -> None:
    """A Google Doc's listing has no size to check first: its export is capped as it comes."""
    account = Account(drive, tmp_path, max_file_mb=1)
    drive.put(DriveFile("huge", "Huge notes", DOC, b"<p>" + b"words " * 400_000 + b"</p>",
                        [permission("anyone")], modified=now()))
    summary = await account.sync()
    [error] = [e for e in summary.errors if "Huge notes" in e]
    assert "the export failed (it is over the 1 MB limit, `gdrive.max_file_mb`)" in error
    assert "huge" not in await account.bodies()


class TestGDriveContract(ConnectorContract):
    kind = "gdrive"

    @pytest.fixture
    def rig(self, drive: FakeDrive, tmp_path: Path) -> Rig:
        def remove() -> str:
            del drive.files["s1"]
            return "s1"

        return Rig(
            SourceConfig("gd", url=drive.url),
            {"key_file": drive.key_file(tmp_path), "page_size": 2, "backoff_s": 0.01,
             "max_wait_s": 2.0},
            frozenset({"d1", "s1", "p1", "f1"}),
            {"d1": Seen("Travel policy", "https://docs.google.com/document/d/d1/edit?usp=drivesdk",
                        "Book trains for trips under four hours.")},
            public="s1", restricted=("p1", frozenset({"gdrive:group:hr@acme.com",
                                                      "gdrive:user:bo@acme.com"})),
            remove=remove,
            bad_credential=Trouble(("Source 'gd' (Google Drive)", "`gdrive.key_file`",
                                    "invalid_grant"), apply=drive.keys.clear,
                                   secret="PRIVATE KEY"),
            unreadable=Trouble(("Travel policy", "too large to be exported"),
                               apply=lambda: drive.export_fails.add("d1")))
