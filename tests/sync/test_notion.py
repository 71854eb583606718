"""The Notion connector through the sync job, against a fake Notion API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.notion import NotionConnector, NotionSettings
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.notion_server import (
    SECRET,
    DataSource,
    FakeNotion,
    NotionDatabase,
    NotionPage,
    block,
    text,
)
from tests.fakes.platform_server import rate_limited
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble
from tests.sync.harness import FailingEmbedder, SpyIndex, snapshot

RUNBOOK = [
    block("b1", "heading_1", rich_text=text("On-call runbook")),
    block("b2", "paragraph", rich_text=text("Page the ") + text("secondary", bold=True)),
    block("b3", "bulleted_list_item", [block("b3a", "bulleted_list_item",
                                             rich_text=text("check the dashboard"))],
          rich_text=text("First response")),
    block("b4", "to_do", rich_text=text("Acknowledge the alert"), checked=True),
    block("b5", "to_do", rich_text=text("Write the postmortem"), checked=False),
    block("b6", "code", rich_text=text("kubectl rollout undo deploy/api"), language="bash"),
    block("b7", "callout", rich_text=text("Never restart the primary."), icon={
        "type": "emoji", "emoji": "⚠️"}),
    block("b8", "toggle", [block("b8a", "paragraph", rich_text=text("Hidden details"))],
          rich_text=text("More")),
    block("b9", "table", [
        block("r1", "table_row", cells=[text("Service"), text("Owner")]),
        block("r2", "table_row", cells=[text("api"), text("SRE")])],
          table_width=2, has_column_header=True, has_row_header=False),
]


@pytest.fixture
async def notion() -> AsyncIterator[FakeNotion]:
    server = FakeNotion()
    server.pages["p-1"] = NotionPage("p-1", "On-call", RUNBOOK, tags=["sre", "oncall"])
    server.pages["p-2"] = NotionPage("p-2", "Welcome", [block("w1", "paragraph", rich_text=text(
        "Hello, new joiner."))], public=True, edited="2026-01-03T10:00:00.000Z")
    for i in range(3):
        server.pages[f"p-n{i}"] = NotionPage(f"p-n{i}", f"Note {i}", [block(
            f"n{i}", "paragraph", rich_text=text(f"Note number {i}."))])
    await server.start()
    yield server
    await server.stop()


class Source:
    def __init__(self, server: FakeNotion, secret: str = SECRET, rate: float = 1000,
                 **options: Any) -> None:
        self.connector = NotionConnector(SourceConfig("notes", url=server.url, token=secret),
                                         NotionSettings(requests_per_second=rate,
                                                        backoff_s=0.01, max_wait_s=5,
                                                        **options))
        self.index, self.state = SpyIndex(MemoryIndex()), MemorySyncState()

    async def sync(self, full: bool = False, embedder: Any = None) -> Any:
        job = SyncJob("notes", self.connector, self.index, embedder or HashEmbedder(),
                      self.state, JobConfig(embed_batch=2))
        return await job.run(full=full)

    async def docs(self) -> dict[str, SourceDocument]:
        return {d.doc_id: d async for d in self.connector.documents(None)
                if isinstance(d, SourceDocument)}


async def test_blocks_become_markdown_recursively(notion: FakeNotion) -> None:
    doc = (await Source(notion).docs())["p-1"]
    body = doc.body
    assert "# On-call runbook" in body and "Page the **secondary**" in body
    assert "- First response\n\n  - check the dashboard" in body
    assert "- [x] Acknowledge the alert" in body and "- [ ] Write the postmortem" in body
    assert "```bash\nkubectl rollout undo deploy/api\n```" in body
    assert "> ⚠️ Never restart the primary." in body
    assert "- More\n\n  Hidden details" in body
    assert "| Service | Owner |\n| --- | --- |\n| api | SRE |" in body
    assert (doc.title, doc.tags, doc.access) == ("On-call", ("sre", "oncall"),
                                                 ("notion:workspace",))
    assert doc.url.startswith("https://www.notion.so/On-call-")


async def test_index_update_prune_and_quiet_second_run(notion: FakeNotion) -> None:
    source = Source(notion)
    first = await source.sync()
    assert (first.counts.added, first.counts.failed) == (5, 0)
    writes = list(source.index.writes)
    again = await source.sync()
    assert again.counts.added == again.counts.updated == 0 and source.index.writes == writes
    notion.pages["p-n1"].blocks = [block("n1b", "paragraph", rich_text=text("Rewritten."))]
    notion.pages["p-n1"].edited = "2099-01-01T00:00:00.000Z"
    del notion.pages["p-n2"]
    changed = await source.sync()
    assert (changed.counts.updated, changed.counts.deleted) == (1, 0)
    full = await source.sync(full=True)
    assert (full.counts.deleted, full.counts.unchanged) == (1, 4)
    assert set(await source.index.list_documents("notes")) == {"p-1", "p-2", "p-n0", "p-n1"}
    assert (await source.docs())["p-2"].access == ("public",)


async def test_a_malformed_block_keeps_the_previous_version(notion: FakeNotion) -> None:
    source = Source(notion)
    await source.sync()
    before = await snapshot(source.index)
    notion.pages["p-n0"].blocks = [{"object": "block", "id": "x", "type": "paragraph",
                                    "has_children": False, "_children": []}]
    notion.pages["p-n0"].edited = "2099-01-01T00:00:00.000Z"
    summary = await source.sync()
    assert summary.counts.failed == 1 and "Note 0" in summary.errors[0]
    assert await snapshot(source.index) == before


async def test_429_and_three_requests_a_second(notion: FakeNotion) -> None:
    notion.faults.append(rate_limited("0.2"))
    summary = await Source(notion, rate=3).sync()
    assert summary.counts.added == 5
    times = notion.times
    # Requests leave a third of a second apart, across the listing and the id listing; on
    # arrival a late first one (connection set-up) can shorten the run by a fraction.
    assert len(times) >= 10 and (len(times) - 1) / (times[-1] - times[0]) <= 3.3
    assert min(b - a for a, b in zip(times, times[3:], strict=False)) >= 0.7


async def test_a_run_that_dies_midway_is_finished_by_the_next(notion: FakeNotion) -> None:
    source = Source(notion)
    with pytest.raises(SyncError):
        await source.sync(embedder=FailingEmbedder(HashEmbedder(), fail_on_call=2))
    await source.sync()
    clean = Source(notion)
    await clean.sync()
    assert await snapshot(source.index) == await snapshot(clean.index)


def engineering(notion: FakeNotion) -> None:
    """One database holding two data sources (2025-09-03's multi-source databases)."""
    def row(page_id: str, title: str, edited: str = "2026-01-04T09:00:00.000Z") -> NotionPage:
        return NotionPage(page_id, title, [block(f"{page_id}b", "paragraph",
                                                  rich_text=text(f"{title}: the details."))],
                          edited=edited, tags=["eng"])
    notion.add_database(
        NotionDatabase("db-eng", "Engineering", [DataSource("ds-runbooks", "Runbooks"),
                                                 DataSource("ds-postmortems", "Postmortems")]),
        {"ds-runbooks": [row("r-1", "Restart the queue"), row("r-2", "Rotate the keys")],
         "ds-postmortems": [row("pm-1", "March outage", "2026-01-05T09:00:00.000Z")]})


async def test_a_database_with_two_data_sources_is_read_from_both(notion: FakeNotion) -> None:
    engineering(notion)
    source = Source(notion, databases=["db-eng"])
    first = await source.sync()
    assert (first.counts.added, first.counts.failed) == (3, 0)  # the rows only, of both
    assert set(await source.index.list_documents("notes")) == {"r-1", "r-2", "pm-1"}
    docs = await source.docs()
    assert (docs["pm-1"].title, docs["pm-1"].tags) == ("March outage", ("eng",))
    assert "March outage: the details." in docs["pm-1"].body
    assert "/v1/search" not in notion.paths
    assert {"/v1/databases/db-eng", "/v1/data_sources/ds-runbooks/query",
            "/v1/data_sources/ds-postmortems/query"} <= set(notion.paths)
    notion.pages["r-2"].blocks = [block("r2b", "paragraph", rich_text=text("Rotated."))]
    notion.pages["r-2"].edited = "2099-01-01T00:00:00.000Z"  # the first source's rows change
    del notion.pages["pm-1"]  # the second's go
    changed = await source.sync()
    assert changed.counts.updated == 1
    full = await source.sync(full=True)
    assert (full.counts.deleted, full.counts.unchanged) == (1, 2)  # pm-1 gone; r-1, r-2 kept
    assert set(await source.index.list_documents("notes")) == {"r-1", "r-2"}


async def test_search_finds_the_rows_of_every_data_source_beside_the_pages(
        notion: FakeNotion) -> None:
    engineering(notion)  # search can answer data source objects too: they are no documents
    source = Source(notion)
    summary = await source.sync()
    assert (summary.counts.added, summary.counts.failed) == (8, 0)
    docs = await source.docs()
    assert set(docs) == {"p-1", "p-2", "p-n0", "p-n1", "p-n2", "r-1", "r-2", "pm-1"}
    assert docs["r-1"].title == "Restart the queue"  # the row's title property is "Name"


async def test_a_database_not_shared_names_the_setting(notion: FakeNotion) -> None:
    engineering(notion)
    notion.unshared.add("db-eng")
    with pytest.raises(SyncError) as caught:
        await Source(notion, databases=["db-eng"]).sync()
    message = caught.value.user_message
    assert message.startswith("Source 'notes' (Notion)") and "`notion.databases`" in message
    assert "db-eng" in message


class TestNotionContract(ConnectorContract):
    kind = "notion"

    @pytest.fixture
    def rig(self, notion: FakeNotion) -> Rig:
        def remove() -> str:
            del notion.pages["p-n2"]
            return "p-n2"

        return Rig(
            SourceConfig("notes", url=notion.url, token=SECRET),
            {"requests_per_second": 1000, "backoff_s": 0.01, "max_wait_s": 5},
            frozenset({"p-1", "p-2", "p-n0", "p-n1", "p-n2"}),
            {"p-2": Seen("Welcome", "https://www.notion.so/Welcome-p2", "Hello, new joiner.")},
            public="p-2", restricted=("p-1", frozenset({"notion:workspace"})), remove=remove,
            bad_credential=Trouble(("Source 'notes' (Notion)", "HTTP 401", "`token`"),
                                 source={"token": "ntn_wrong_7"}, secret="ntn_wrong_7"),
            unreadable=Trouble(("Note 0",), apply=lambda: notion.unshared.add("p-n0")),
            known_groups=frozenset({"public", "notion:workspace"}))
