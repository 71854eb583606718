"""The SharePoint connector through the sync job, against a fake Microsoft Graph."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rag.errors import ConfigError, SyncError
from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.sharepoint import SharePointConnector, SharePointSettings, build
from sync.connectors.sharepoint_graph import access_of
from sync.job import JobConfig, SyncJob
from tests.fakes.graph_server import CLIENT_ID, SECRET, TENANT
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.sharepoint_server import (
    FakeFile,
    FakePage,
    FakeSharePoint,
    entra_group,
    org_link,
    people_link,
    site_group,
)
from tests.fakes.tls import AppCertificate
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble
from tests.sync.harness import FailingEmbedder, SpyIndex, snapshot
from tests.sync.pdf import make_pdf
from tests.sync.test_convert_files import docx

SITE, DRIVE, ONEDRIVE = "contoso.sharepoint.com,site-1", "b!lib-1", "b!od-2"
HR_GROUP = "5F1B0C3A-2222-4444-8888-AAAABBBBCCCC"


def fill(server: FakeSharePoint) -> None:
    server.sites[SITE] = [DRIVE]
    server.put(DRIVE, FakeFile("01A", "Expenses.docx", docx(
        ["Expense claims are filed within thirty days.", "Receipts are required."]),
        [org_link()]))
    server.put(DRIVE, FakeFile("01B", "Pay bands.pdf", make_pdf(
        ["Pay bands are reviewed every spring."]), [entra_group(HR_GROUP, "HR"),
                                                     site_group("Contoso Owners", "owner")]))
    server.put(DRIVE, FakeFile("01C", "Notes.txt", b"Plain notes about the office wifi.",
                               [people_link(("AB12-CD", "Misty Suarez"))]))
    server.put(DRIVE, FakeFile("01D", "logo.png", b"\x89PNG", [org_link()]))
    server.put(ONEDRIVE, FakeFile("02A", "Onboarding.md", b"# Onboarding\n\nDay one: laptop.",
                                  [site_group("Contoso Members")]))
    server.put_page(SITE, FakePage("p-1", "Travel policy",
                                   "<h2>Booking</h2><p>Book trains for trips under 4 hours.</p>"))


@pytest.fixture
async def graph() -> AsyncIterator[FakeSharePoint]:
    server = FakeSharePoint()
    fill(server)
    await server.start()
    yield server
    await server.stop()


def connector(server: FakeSharePoint, **overrides: Any) -> SharePointConnector:
    token = overrides.pop("token", SECRET)
    options: dict[str, Any] = {"tenant_id": TENANT, "client_id": CLIENT_ID,
                               "authority": server.login_url, "sites": [SITE],
                               "drives": [ONEDRIVE], "backoff_s": 0.01, "max_wait_s": 2.0}
    return SharePointConnector(SourceConfig("sp", url=server.graph_url, token=token),
                               SharePointSettings(**{**options, **overrides}))


class Tenant:
    def __init__(self, server: FakeSharePoint) -> None:
        self.server = server
        self.index, self.state = SpyIndex(MemoryIndex()), MemorySyncState()

    async def sync(self, full: bool = False, embedder: Any = None, **options: Any) -> Any:
        job = SyncJob("sp", connector(self.server, **options), self.index,
                      embedder or HashEmbedder(), self.state, JobConfig(embed_batch=4))
        return await job.run(full=full)

    async def bodies(self) -> dict[str, str]:
        return {row[0]: row[3] for row in (await snapshot(self.index)).values()}


async def test_files_and_pages_are_indexed_with_their_permissions(graph: FakeSharePoint) -> None:
    tenant = Tenant(graph)
    first = await tenant.sync()
    assert (first.counts.added, first.counts.failed) == (5, 0)  # the png is not a document
    bodies = await tenant.bodies()
    assert "Expense claims are filed within thirty days." in bodies[f"{DRIVE}:01A"]
    assert "Pay bands are reviewed every spring." in bodies[f"{DRIVE}:01B"]
    assert "Book trains for trips under 4 hours." in bodies[f"page:{SITE}:p-1"]
    docs = {d.doc_id: d async for d in connector(graph).documents(None)
            if isinstance(d, SourceDocument)}
    assert docs[f"{DRIVE}:01A"].access == ("public",)
    assert set(docs[f"{DRIVE}:01B"].access) == {
        f"entra:group:{HR_GROUP.lower()}", "sharepoint:group:Contoso Owners"}
    assert docs[f"{DRIVE}:01C"].access == ("entra:user:ab12-cd",)
    assert docs[f"{ONEDRIVE}:02A"].access == (
        "sharepoint:group:Contoso Members",)
    assert docs[f"page:{SITE}:p-1"].access == (f"sharepoint:site:{SITE}",)


async def test_the_delta_link_carries_updates_and_deletes_at_once(graph: FakeSharePoint) -> None:
    tenant = Tenant(graph)
    await tenant.sync()
    writes = list(tenant.index.writes)
    again = await tenant.sync()
    assert (again.counts.added, again.counts.updated, again.counts.unchanged) == (0, 0, 0)
    assert tenant.index.writes == writes  # the stored delta link said: nothing changed
    graph.put(DRIVE, FakeFile("01C", "Notes.txt", b"The wifi password rotates monthly.",
                              [org_link()], modified="2026-02-01T10:00:00Z"))
    graph.delete(DRIVE, "01A")
    changed = await tenant.sync()
    assert (changed.counts.updated, changed.counts.deleted) == (1, 1)
    bodies = await tenant.bodies()
    assert f"{DRIVE}:01A" not in bodies and "rotates monthly" in bodies[f"{DRIVE}:01C"]
    delta_reads = [r for r in graph.requests if "/root/delta" in r]
    assert any("token=" in r and "page-" not in r for r in delta_reads)


async def test_a_revoked_delta_token_restarts_from_scratch_and_prunes(
        graph: FakeSharePoint) -> None:
    tenant = Tenant(graph)
    await tenant.sync()
    graph.revoked |= {str(seq) for seq, _, _ in graph.log} | {"0"}
    graph.delete(DRIVE, "01B")  # a deletion the lost token would have carried
    summary = await tenant.sync()
    assert (summary.counts.failed, summary.counts.deleted, summary.counts.added) == (0, 1, 0)
    assert any("410" in w and DRIVE in w for w in summary.warnings)
    assert f"{DRIVE}:01B" not in await tenant.bodies()


async def test_a_file_too_large_is_reported_by_name_and_the_rest_syncs(
        graph: FakeSharePoint) -> None:
    graph.put(DRIVE, FakeFile("01E", "Huge deck.pptx", b"PK", [org_link()],
                              size=80 * 2**20))
    summary = await Tenant(graph).sync()
    assert (summary.counts.added, summary.counts.failed) == (5, 1)
    assert "Huge deck.pptx" in summary.errors[0] and "50 MB" in summary.errors[0]
    assert "sharepoint.max_file_mb" in summary.errors[0]
    assert not any("/items/01E/content" in r for r in graph.requests)  # never downloaded


async def test_an_unreadable_or_corrupt_file_keeps_its_previous_version(
        graph: FakeSharePoint) -> None:
    tenant = Tenant(graph)
    await tenant.sync()
    before = await snapshot(tenant.index)
    graph.put(DRIVE, FakeFile("01A", "Expenses.docx", b"not a zip", [org_link()]))
    graph.unreadable.add("01B")
    graph.put(DRIVE, FakeFile("01B", "Pay bands.pdf", make_pdf(["New bands."]), []))
    summary = await tenant.sync()
    assert summary.counts.failed == 2
    assert any("Expenses.docx" in e for e in summary.errors)
    assert any("Pay bands.pdf" in e and "HTTP 403" in e for e in summary.errors)
    assert await snapshot(tenant.index) == before


async def test_a_certificate_instead_of_a_secret(graph: FakeSharePoint,
                                                 tmp_path: Path) -> None:
    cert = AppCertificate.new()
    graph.entra.certificate, graph.secret = cert.cert, None  # the tenant forbids secrets
    summary = await Tenant(graph).sync(token=None, certificate_path=cert.pfx_file(
        tmp_path, b"pfx-pass-2"), certificate_password="pfx-pass-2")
    assert (summary.counts.added, summary.counts.failed) == (5, 0)
    assert len(graph.entra.assertions) == 1  # one verified client assertion, no secret sent
    assert all("client_secret" not in form for form in graph.entra.token_requests)


async def test_one_token_serves_every_run_until_near_expiry(graph: FakeSharePoint) -> None:
    source = connector(graph)
    for _ in range(3):
        await SyncJob("sp", source, MemoryIndex(), HashEmbedder(), MemorySyncState(),
                      JobConfig(embed_batch=4)).run()
    assert graph.tokens_issued == 1  # msal's cache, kept by the connector across runs


@pytest.mark.parametrize(("options", "named"), [
    ({"token": None}, "`token`"),
    ({"token": None, "certificate_path": "/nonexistent/sift.pem"},
     "`sharepoint.certificate_path` names /nonexistent/sift.pem"),
])
def test_credentials_that_cannot_work_are_named(options: dict[str, Any], named: str) -> None:
    token = options.pop("token")
    with pytest.raises(ConfigError) as caught:
        build(SourceConfig("sp", token=token), SharePointSettings(
            tenant_id=TENANT, client_id=CLIENT_ID, sites=[SITE], **options))
    assert named in caught.value.user_message


async def test_expired_credentials_are_one_sentence_naming_source_and_setting(
        graph: FakeSharePoint) -> None:
    graph.secret = "rotated-secret"
    tenant = Tenant(graph)
    with pytest.raises(SyncError) as caught:
        await tenant.sync()
    message = caught.value.user_message
    assert message.startswith("Source 'sp' (SharePoint)") and "`token`" in message
    assert "invalid_client" in message and SECRET not in message
    assert tenant.index.writes == [] and tenant.state.writes == 0


async def test_a_token_expiring_mid_run_is_renewed_and_the_run_completes(
        graph: FakeSharePoint) -> None:
    graph.expire_after = 3  # an hour-long token ends while the first pass reads
    summary = await Tenant(graph).sync()
    assert (summary.counts.added, summary.counts.failed) == (5, 0)
    assert graph.tokens_issued == 2


async def test_a_secret_expiring_mid_run_stops_it_and_the_next_run_catches_up(
        graph: FakeSharePoint) -> None:
    tenant = Tenant(graph)
    graph.expire_after = 3  # and the secret expires with the token: renewal is refused
    graph.on_expiry = lambda: setattr(graph, "secret", "rotated-secret")
    with pytest.raises(SyncError) as caught:
        await tenant.sync()
    assert caught.value.user_message.startswith("Source 'sp' (SharePoint)")
    assert "`token`" in caught.value.user_message and SECRET not in caught.value.user_message
    assert tenant.state.runs[-1].status == "failed"
    graph.secret = SECRET
    again = await tenant.sync()
    assert (again.counts.added, again.counts.failed) == (5, 0)
    clean = Tenant(graph)
    await clean.sync()
    assert await snapshot(tenant.index) == await snapshot(clean.index)


@pytest.mark.parametrize(("permissions", "expected"), [
    ([org_link()], ("public",)),
    ([{"id": "a", "roles": ["read"], "link": {"scope": "anonymous", "type": "view"}}],
     ("public",)),
    ([{"id": "x", "roles": ["read"], "link": {"scope": "existingAccess", "type": "view"}}], ()),
    ([], ()),
    ([{"id": "2", "roles": ["write"], "grantedTo": {"user": {"id": "5D33DD65C6932946",
                                                              "displayName": "John Doe"}}}],
     ("entra:user:5d33dd65c6932946",)),
])
def test_permissions_map_to_principals(permissions: list[dict[str, Any]],
                                       expected: tuple[str, ...]) -> None:
    assert access_of(permissions) == expected


async def test_a_run_that_dies_midway_keeps_the_old_delta_link(graph: FakeSharePoint) -> None:
    tenant = Tenant(graph)
    await tenant.sync()
    graph.put(DRIVE, FakeFile("01C", "Notes.txt", b"The wifi moved to the new router.",
                              [org_link()]))
    graph.put(DRIVE, FakeFile("01F", "Holidays.txt", b"Twelve public holidays a year.",
                              [org_link()]))
    with pytest.raises(SyncError):
        await tenant.sync(embedder=FailingEmbedder(HashEmbedder(), fail_on_call=1))
    assert tenant.state.runs[-1].status == "failed"
    again = await tenant.sync()  # the delta since the last good run still carries both
    assert (again.counts.added, again.counts.updated) == (1, 1)
    clean = Tenant(graph)
    await clean.sync()
    assert await snapshot(tenant.index) == await snapshot(clean.index)


class TestSharePointContract(ConnectorContract):
    kind = "sharepoint"

    @pytest.fixture
    def rig(self, graph: FakeSharePoint) -> Rig:
        def remove() -> str:
            graph.delete(DRIVE, "01C")
            return f"{DRIVE}:01C"

        def rotate() -> None:
            graph.secret = "rotated-secret"

        return Rig(
            SourceConfig("sp", url=graph.graph_url, token=SECRET),
            {"tenant_id": TENANT, "client_id": CLIENT_ID, "authority": graph.login_url,
             "sites": [SITE], "drives": [ONEDRIVE], "backoff_s": 0.01, "max_wait_s": 2.0},
            frozenset({f"{DRIVE}:01A", f"{DRIVE}:01B", f"{DRIVE}:01C", f"{ONEDRIVE}:02A",
                       f"page:{SITE}:p-1"}),
            {f"{DRIVE}:01A": Seen("Expenses", "https://contoso.sharepoint.com/Docs/Expenses.docx",
                                  "Expense claims are filed within thirty days.")},
            public=f"{DRIVE}:01A", restricted=(f"{DRIVE}:01B", frozenset({
                f"entra:group:{HR_GROUP.lower()}", "sharepoint:group:Contoso Owners"})),
            remove=remove,
            bad_credential=Trouble(("Source 'sp' (SharePoint)", "`token`", "invalid_client"),
                                   apply=rotate, secret=SECRET),
            unreadable=Trouble(("Pay bands.pdf", "HTTP 403"),
                               apply=lambda: graph.unreadable.add("01B")))
