"""SharePoint files and pages, and Drive files, read by id (what a push will name)."""

from __future__ import annotations

from pathlib import Path

from sync.connectors.base import DocumentFailure, DocumentGone, SourceDocument
from sync.job import JobConfig, SyncJob
from tests.fakes.gdrive_server import DOC, DriveFile, FakeDrive, permission
from tests.fakes.sharepoint_server import FakeFile, FakePage, FakeSharePoint, org_link
from tests.sync.conftest import HashEmbedder
from tests.sync.test_gdrive import Account, drive, now  # noqa: F401 (the fixture)
from tests.sync.test_sharepoint import DRIVE, SITE, Tenant, connector, graph  # noqa: F401


async def test_sharepoint_fetch_reads_files_and_pages_by_id(
        graph: FakeSharePoint) -> None:  # noqa: F811
    ids = [f"{DRIVE}:01A", f"page:{SITE}:p-1"]
    [expenses, travel] = [d async for d in connector(graph).fetch(ids)]
    assert isinstance(expenses, SourceDocument) and expenses.access == ("public",)
    assert "Expense claims are filed within thirty days." in expenses.body
    assert isinstance(travel, SourceDocument) and "Book trains" in travel.body
    assert not any("/root/delta" in r for r in graph.requests)  # no listing for two ids


async def test_sharepoint_fetch_says_gone_for_what_sift_may_not_show(
        graph: FakeSharePoint) -> None:  # noqa: F811
    graph.put("b!other-drive", FakeFile("09Z", "Elsewhere.txt", b"Not configured.", [org_link()]))
    graph.put_page("other-site", FakePage("p-9", "Elsewhere", "<p>Not configured.</p>"))
    graph.delete(DRIVE, "01A")
    ids = [f"{DRIVE}:01A", f"{DRIVE}:01D", "b!other-drive:09Z", "page:other-site:p-9",
           f"page:{SITE}:p-404", "nonsense"]  # deleted, a png, unconfigured, gone, no drive
    found = [d async for d in connector(graph).fetch(ids)]
    assert found == [DocumentGone(i) for i in ids]
    assert not any("09Z" in r or "other-site" in r for r in graph.requests)


async def test_sharepoint_fetch_reports_an_unreadable_file_by_id(
        graph: FakeSharePoint) -> None:  # noqa: F811
    graph.unreadable.add("01B")
    [item] = [d async for d in connector(graph).fetch([f"{DRIVE}:01B"])]
    assert isinstance(item, DocumentFailure) and f"{DRIVE}:01B" in item.error
    assert "HTTP 403" in item.error


async def test_a_pushed_sharepoint_change_updates_and_deletes_without_a_listing(
        graph: FakeSharePoint) -> None:  # noqa: F811
    tenant = Tenant(graph)
    await tenant.sync()
    graph.put(DRIVE, FakeFile("01C", "Notes.txt", b"The wifi password rotates weekly.",
                              [org_link()]))
    graph.delete(DRIVE, "01A")
    graph.requests.clear()
    job = SyncJob("sp", connector(graph), tenant.index, HashEmbedder(), tenant.state,
                  JobConfig(embed_batch=4))
    summary = await job.run_ids([f"{DRIVE}:01C", f"{DRIVE}:01A"])
    assert (summary.counts.updated, summary.counts.deleted) == (1, 1)
    bodies = await tenant.bodies()
    assert f"{DRIVE}:01A" not in bodies and "rotates weekly" in bodies[f"{DRIVE}:01C"]
    assert not any("/root/delta" in r for r in graph.requests)
    again = await tenant.sync()  # the stored delta link still carries both changes: no-ops
    assert (again.counts.updated, again.counts.added, again.counts.failed) == (0, 0, 0)


async def test_drive_fetch_reads_files_and_says_gone_for_the_rest(
        drive: FakeDrive, tmp_path: Path) -> None:  # noqa: F811
    drive.files["p1"].trashed = True
    drive.put(DriveFile("z9", "Elsewhere", DOC, b"<p>Another shared drive.</p>",
                        [permission("anyone")], drive="0AOther"))
    account = Account(drive, tmp_path, drives=["0AShared"])
    found = [d async for d in account.connector.fetch(["f1", "p1", "x1", "z9", "nope"])]
    security = found[0]
    assert isinstance(security, SourceDocument) and "Rotate keys quarterly." in security.body
    assert security.access == ("gdrive:user:ana@acme.com",)
    assert found[1:] == [DocumentGone(i) for i in ("p1", "x1", "z9", "nope")]
    assert not any(r.startswith("/drive/v3/files?") for r in drive.requests)  # no listing


async def test_a_pushed_drive_change_and_a_failed_export_by_id(
        drive: FakeDrive, tmp_path: Path) -> None:  # noqa: F811
    account = Account(drive, tmp_path)
    await account.sync()
    drive.put(DriveFile("d1", "Travel policy", DOC, b"<p>Planes beyond six hours.</p>",
                        [permission("anyone")], modified=now()))
    drive.export_fails.add("s1")
    job = SyncJob("gd", account.connector, account.index, HashEmbedder(), account.state,
                  JobConfig(embed_batch=4))
    summary = await job.run_ids(["d1", "s1"])
    assert (summary.counts.updated, summary.counts.failed) == (1, 1)
    assert "Price list" in summary.errors[0] and "too large to be exported" in summary.errors[0]
    bodies = await account.bodies()
    assert "Planes beyond six hours." in bodies["d1"] and "Starter" in bodies["s1"]
