"""`sift sync` as a process against fake SharePoint (Graph) and Google Drive: real Weaviate."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.gdrive_server import DOC, DriveFile, FakeDrive, permission
from tests.fakes.graph_server import CLIENT_ID, SECRET, TENANT
from tests.fakes.sharepoint_server import FakeFile, FakeSharePoint, entra_group, org_link
from tests.sync.test_convert_files import docx
from tests.sync.test_platforms_cli import PROSE, Platforms
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
DRIVE = "b!lib-1"
GROUP = "5f1b0c3a-2222-4444-8888-aaaabbbbcccc"


class Drives(Platforms):
    """The drive fakes and a sift.toml naming them (the CLI runner is the platforms one)."""

    def __init__(self, root: Path, server: ManagedWeaviate) -> None:
        super().__init__(root, server)
        self.graph = FakeSharePoint()
        self.graph.sites["site-1"] = [DRIVE]
        for i in range(3):
            self.graph.put(DRIVE, FakeFile(f"01{i}", f"Keys {i}.docx", docx([f"{PROSE} ({i})"]),
                                           [org_link()] if i else [entra_group(GROUP, "HR")]))
        self.drive = FakeDrive()
        for i in range(3):
            self.drive.put(DriveFile(f"d{i}", f"Keys {i}", DOC, f"<p>{PROSE} ({i})</p>".encode(),
                                     [permission("domain", "acme.com")]))

    async def start(self) -> None:
        await self.graph.start()
        await self.drive.start()
        await super().start()
        key = self.drive.key_file(self.root)
        config = self.root / "sift.toml"
        config.write_text(
            f'[[groups]]\nname = "hr"\nentra_groups = ["{GROUP}"]\n'
            'principals = ["gdrive:domain:acme.com"]\n\n'
            f'[[sources]]\nname = "gd"\nkind = "gdrive"\nurl = "{self.drive.url}"\n'
            f'[sources.gdrive]\nkey_file = "{key}"\n\n'
            f'[[sources]]\nname = "sp"\nkind = "sharepoint"\nurl = "{self.graph.graph_url}"\n'
            f'token = "{SECRET}"\n[sources.sharepoint]\ntenant_id = "{TENANT}"\n'
            f'client_id = "{CLIENT_ID}"\nauthority = "{self.graph.login_url}"\n'
            f'sites = ["site-1"]\npages = false\n', encoding="utf-8")

    async def stop(self) -> None:
        await self.graph.stop()
        await self.drive.stop()
        await super().stop()


@pytest.fixture
async def drives(tmp_path: Path, weaviate_server: ManagedWeaviate) -> AsyncIterator[Drives]:
    made = Drives(tmp_path, weaviate_server)
    await made.start()
    yield made
    await made.stop()


async def test_sift_sync_indexes_updates_and_deletes_drive_files(drives: Drives) -> None:
    first = await drives.sync()
    assert {name: (row["added"], row["failed"]) for name, row in first.items()} == {
        "sp": (3, 0), "gd": (3, 0)}
    assert drives.access("sp") == {f"{DRIVE}:010": [f"entra:group:{GROUP}"],
                                   f"{DRIVE}:011": ["public"], f"{DRIVE}:012": ["public"]}
    assert drives.access("gd") == {f"d{i}": ["gdrive:domain:acme.com"] for i in range(3)}
    again = await drives.sync()
    assert all(row["added"] == row["updated"] == row["chunks_written"] == 0
               for row in again.values())
    drives.graph.put(DRIVE, FakeFile("011", "Keys 1.docx", docx(["Rotated monthly now."]),
                                     [org_link()]))
    drives.graph.delete(DRIVE, "012")
    drives.drive.files["d2"].trashed = True
    changed = await drives.sync()
    assert (changed["sp"]["updated"], changed["sp"]["deleted"]) == (1, 1)
    assert (changed["gd"]["deleted"], changed["gd"]["unchanged"]) == (1, 0)
    assert set(drives.access("sp")) == {f"{DRIVE}:010", f"{DRIVE}:011"}
    assert set(drives.access("gd")) == {"d0", "d1"}
