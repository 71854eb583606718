"""The Confluence connector through the sync job, against a fake Cloud and Data Center."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.confluence import ConfluenceConnector, ConfluenceSettings
from sync.connectors.confluence_storage import storage_to_markdown
from sync.job import JobConfig, SyncJob
from tests.fakes.confluence_server import EMAIL, TOKEN, FakeConfluence, FakePage
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.platform_server import rate_limited
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble
from tests.sync.harness import FailingEmbedder, SpyIndex, snapshot

STORAGE = """<h2>Rotating keys</h2><p>Run the script&nbsp;below.</p>
<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:plain-text-body><![CDATA[vault rotate --key <name> && echo done]]></ac:plain-text-body>
</ac:structured-macro>
<ac:structured-macro ac:name="warning"><ac:rich-text-body><p>Never on Fridays.</p>
</ac:rich-text-body></ac:structured-macro>
<table><tbody><tr><th>Key</th><th>Owner</th></tr><tr><td>db</td><td>SRE</td></tr></tbody></table>
<ac:structured-macro ac:name="toc" />
<p>See <ac:link><ri:page ri:content-title="Vault basics" /></ac:link>.</p>"""


def pages(server: FakeConfluence) -> None:
    server.put(FakePage("1001", "ENG", "Rotating keys", STORAGE, labels=["security", "howto"]))
    server.put(FakePage("1002", "ENG", "Pay bands", "<p>Bands are reviewed yearly.</p>",
                        groups=["hr"], users=["557058:bo"]))
    server.put(FakePage("1003", "DOCS", "Welcome", "<p>Hello, everyone.</p>"))
    for i in range(4):
        server.put(FakePage(f"20{i}", "ENG", f"Runbook {i}", f"<p>Runbook {i} steps.</p>",
                            updated=f"2026-01-0{i + 2}T10:00:00.000Z"))


@pytest.fixture
async def confluence() -> AsyncIterator[FakeConfluence]:
    server = FakeConfluence()
    pages(server)
    await server.start()
    yield server
    await server.stop()


def connector(server: FakeConfluence, deployment: str, **overrides: Any) -> ConfluenceConnector:
    cloud = deployment == "cloud"
    options: dict[str, Any] = {"deployment": deployment, "email": EMAIL if cloud else "",
                               "spaces": ["ENG", "DOCS"], "public_spaces": ["DOCS"],
                               "page_size": 2, "backoff_s": 0.01, "max_wait_s": 5.0}
    token = overrides.pop("token", TOKEN)
    source = SourceConfig("wiki", url=server.url + ("/wiki" if cloud else ""), token=token)
    return ConfluenceConnector(source, ConfluenceSettings(**{**options, **overrides}))


class Site:
    """One Sift source over the fake: its index, state and a way to run the job."""

    def __init__(self, server: FakeConfluence, deployment: str) -> None:
        self.server, self.deployment = server, deployment
        self.index, self.state = SpyIndex(MemoryIndex()), MemorySyncState()

    async def sync(self, full: bool = False, embedder: Any = None, **options: Any) -> Any:
        job = SyncJob("wiki", connector(self.server, self.deployment, **options), self.index,
                      embedder or HashEmbedder(), self.state, JobConfig(embed_batch=2))
        return await job.run(full=full)

    async def docs(self) -> dict[str, SourceDocument]:
        conn = connector(self.server, self.deployment)
        return {d.doc_id: d async for d in conn.documents(None)
                if isinstance(d, SourceDocument)}


DEPLOYMENTS = pytest.mark.parametrize("deployment", ["cloud", "datacenter"])


@DEPLOYMENTS
async def test_pages_are_indexed_with_tags_links_and_access(confluence: FakeConfluence,
                                                             deployment: str) -> None:
    site = Site(confluence, deployment)
    first = await site.sync()
    assert (first.counts.added, first.counts.failed) == (7, 0)
    docs = await site.docs()
    keys = docs["1001"]
    assert keys.title == "Rotating keys" and set(keys.tags) == {"security", "howto"}
    assert keys.access == ("confluence:space:ENG",)
    assert keys.url.endswith("/1001") and keys.url.startswith(confluence.url)
    assert set(docs["1002"].access) == {"confluence:group:hr", "confluence:user:557058:bo"}
    assert docs["1003"].access == ("public",)
    assert {d.doc_id for d in docs.values()} == set(await site.index.list_documents("wiki"))


@DEPLOYMENTS
async def test_a_second_run_writes_nothing_and_updates_are_picked_up(
        confluence: FakeConfluence, deployment: str) -> None:
    site = Site(confluence, deployment)
    await site.sync()
    writes = list(site.index.writes)
    again, full = await site.sync(), await site.sync(full=True)
    assert again.counts.added == again.counts.updated == again.counts.failed == 0
    assert (full.counts.unchanged, full.chunks_embedded) == (7, 0)
    assert site.index.writes == writes
    confluence.put(FakePage("202", "ENG", "Runbook 2", "<p>New steps.</p>",
                            updated="2099-01-01T00:00:00.000Z"))
    changed = await site.sync()
    assert (changed.counts.updated, changed.counts.added) == (1, 0)
    rows = await snapshot(site.index)
    assert [r[3] for r in rows.values() if r[0] == "202"] == ["New steps."]


@DEPLOYMENTS
async def test_deleted_pages_are_pruned_by_a_plain_run_on_cloud_and_the_full_pass_on_dc(
        confluence: FakeConfluence, deployment: str) -> None:
    site = Site(confluence, deployment)
    await site.sync()
    del confluence.pages["201"]
    cloud = deployment == "cloud"  # Cloud lists ids alone, 250 a request; Data Center cannot
    assert (await site.sync()).counts.deleted == int(cloud)
    full = await site.sync(full=True)
    assert (full.counts.deleted, full.counts.unchanged) == (int(not cloud), 6)
    assert "201" not in await site.index.list_documents("wiki")


@DEPLOYMENTS
async def test_an_unreadable_space_is_reported_and_the_rest_syncs(confluence: FakeConfluence,
                                                                  deployment: str) -> None:
    confluence.hidden.add("DOCS")
    summary = await Site(confluence, deployment).sync()
    assert (summary.counts.added, summary.counts.failed) == (6, 1)
    assert "space DOCS" in summary.errors[0]


async def test_a_page_whose_restrictions_are_hidden_is_skipped(
        confluence: FakeConfluence) -> None:
    confluence.locked.add("1002")
    summary = await Site(confluence, "cloud").sync()
    assert (summary.counts.added, summary.counts.failed) == (6, 1)
    assert "page 1002" in summary.errors[0] and "HTTP 403" in summary.errors[0]


@DEPLOYMENTS
async def test_a_malformed_body_is_skipped_and_keeps_the_previous_version(
        confluence: FakeConfluence, deployment: str) -> None:
    site = Site(confluence, deployment)
    await site.sync()
    before = await snapshot(site.index)
    confluence.put(FakePage("203", "ENG", "Runbook 3", None, updated="2099-01-01T00:00:00Z"))
    summary = await site.sync()
    assert summary.counts.failed == 1 and "page 203" in summary.errors[0]
    assert await snapshot(site.index) == before


@DEPLOYMENTS
async def test_wrong_credentials_name_the_source_and_setting(confluence: FakeConfluence,
                                                             deployment: str) -> None:
    with pytest.raises(SyncError) as caught:
        await Site(confluence, deployment).sync(token="wrong-token-9")
    message = caught.value.user_message
    assert "Source 'wiki' (Confluence)" in message and "HTTP 401" in message
    assert "`token`" in message and "wrong-token-9" not in message
    assert ("`confluence.email`" in message) == (deployment == "cloud")


@DEPLOYMENTS
async def test_429_retry_after_is_honoured(confluence: FakeConfluence, deployment: str) -> None:
    path = "/wiki/api/v2/spaces" if deployment == "cloud" else "/rest/api/content/search"
    confluence.faults.append(rate_limited("0", path))
    summary = await Site(confluence, deployment).sync()
    assert summary.counts.added == 7
    assert sum(1 for r in confluence.requests if r.startswith(path)) >= 2


@DEPLOYMENTS
async def test_a_run_that_dies_midway_is_finished_by_the_next(confluence: FakeConfluence,
                                                              deployment: str) -> None:
    site = Site(confluence, deployment)
    with pytest.raises(SyncError):
        await site.sync(embedder=FailingEmbedder(HashEmbedder(), fail_on_call=2))
    await site.sync()
    clean = Site(confluence, deployment)
    await clean.sync()
    assert await snapshot(site.index) == await snapshot(clean.index)


def test_storage_format_becomes_markdown() -> None:
    body = storage_to_markdown(STORAGE)
    assert "## Rotating keys" in body and "Run the script below." in body
    assert "```bash\nvault rotate --key <name> && echo done\n```" in body
    assert "> **Warning:**" in body and "> Never on Fridays." in body
    assert "| db | SRE |" in body
    assert "See Vault basics." in body and "toc" not in body


class TestConfluenceContract(ConnectorContract):
    kind = "confluence"

    @pytest.fixture
    def rig(self, confluence: FakeConfluence) -> Rig:
        def remove() -> str:
            del confluence.pages["201"]
            return "201"

        return Rig(
            SourceConfig("wiki", url=confluence.url + "/wiki", token=TOKEN),
            {"deployment": "cloud", "email": EMAIL, "spaces": ["ENG", "DOCS"],
             "public_spaces": ["DOCS"], "page_size": 2, "backoff_s": 0.01},
            frozenset({"1001", "1002", "1003", "200", "201", "202", "203"}),
            {"1003": Seen("Welcome", f"{confluence.url}/wiki/spaces/DOCS/pages/1003",
                          "Hello, everyone.")},
            public="1003", restricted=("1002", frozenset({"confluence:group:hr",
                                                          "confluence:user:557058:bo"})),
            remove=remove,
            bad_credential=Trouble(("Source 'wiki' (Confluence)", "HTTP 401", "`token`",
                                  "`confluence.email`"), source={"token": "wrong-token-9"},
                                 secret="wrong-token-9"),
            unreadable=Trouble(("page 1002", "HTTP 403"), apply=lambda: confluence.locked.add(
                "1002")))
