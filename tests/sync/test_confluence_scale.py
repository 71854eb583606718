"""Confluence Cloud at size: the cursor listing, no request per page when nothing changed, and
deletions applied by a plain run (hundreds of pages here; bench.sync_scale runs 100,000)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from storage.db import Database
from storage.sync_state import SyncStateRepository
from sync.connectors.base import SourceConfig
from sync.connectors.confluence import ConfluenceConnector, ConfluenceSettings
from sync.job import JobConfig, SyncJob
from sync.report import SyncSummary
from tests.fakes.confluence_server import EMAIL, TOKEN, FakeConfluence
from tests.fakes.memory_index import MemoryIndex
from tests.sync.conftest import HashEmbedder

SPACES = ["ENG", "OPS"]
PER_PAGE = ("/labels", "/restriction/byOperation/read")  # what a page's details cost


@pytest.fixture
async def confluence() -> AsyncIterator[FakeConfluence]:
    server = FakeConfluence()
    server.generate(600, SPACES)
    await server.start()
    yield server
    await server.stop()


class Wiki:
    """A Cloud source over the fake: a SQLite sync state, an in-memory index."""

    def __init__(self, server: FakeConfluence, tmp_path: Path) -> None:
        self.server, self.index = server, MemoryIndex()
        db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
        db.upgrade()
        self.state = SyncStateRepository(db)

    async def sync(self, full: bool = False) -> SyncSummary:
        source = SourceConfig("wiki", url=self.server.url + "/wiki", token=TOKEN)
        settings = ConfluenceSettings(deployment="cloud", email=EMAIL, spaces=SPACES,
                                      page_size=100, backoff_s=0.01)
        job = SyncJob("wiki", ConfluenceConnector(source, settings), self.index,
                      HashEmbedder(), self.state, JobConfig())
        return await job.run(full=full)

    async def indexed(self) -> set[str]:
        return set(await self.index.list_documents("wiki"))


async def test_the_fake_pages_its_listing_by_cursor_at_250(confluence: FakeConfluence) -> None:
    auth = "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
    space = confluence.spaces["ENG"]
    url: str | None = f"{confluence.url}/wiki/api/v2/spaces/{space}/pages?limit=1000"
    seen: list[str] = []
    async with httpx.AsyncClient(headers={"Authorization": auth}) as http:
        while url:
            response = await http.get(url)
            body = response.json()
            follow = body["_links"].get("next")
            assert len(body["results"]) == (250 if follow else 50)
            if follow:
                assert "cursor=" in follow and "limit=1000" in follow
                assert response.headers["Link"] == f'<{follow}>; rel="next"'
            else:
                assert "Link" not in response.headers
            seen += [r["id"] for r in body["results"]]
            url = confluence.url + follow if follow else None  # "/wiki/api/v2/…"
    assert len(seen) == len(set(seen)) == 300
    stamps = [confluence.pages[i].updated for i in seen]
    assert stamps == sorted(stamps, reverse=True)  # newest first


async def test_an_unchanged_resync_lists_ids_and_reads_no_page(confluence: FakeConfluence,
                                                               tmp_path: Path) -> None:
    wiki = Wiki(confluence, tmp_path)
    await wiki.sync()
    confluence.requests.clear()
    again = await wiki.sync()
    assert not again.full and again.counts.deleted == 0 == again.counts.added
    assert not [r for r in confluence.requests if r.split("?")[0].endswith(PER_PAGE)
                or "/api/v2/pages/" in r]
    listings = [r for r in confluence.requests if r.split("?")[0].endswith("/pages")]
    # Per space: the newest bodies (one request: nothing changed) and 300 ids at 250 a request.
    assert len([r for r in listings if "body-format=storage" in r]) == 2
    assert len([r for r in listings if "body-format" not in r]) == 4
    assert all("limit=250" in r for r in listings if "body-format" not in r)
    assert len(confluence.requests) == 2 + 2 + 4  # the spaces (for changes, for ids), listings


async def test_a_plain_sync_removes_exactly_the_pages_deleted_at_the_site(
        confluence: FakeConfluence, tmp_path: Path) -> None:
    wiki = Wiki(confluence, tmp_path)
    await wiki.sync()
    everything = set(confluence.pages)
    assert await wiki.indexed() == everything == set(wiki.state.documents("wiki"))
    doomed = set(sorted(everything)[::20])
    for page_id in doomed:
        del confluence.pages[page_id]
    plain = await wiki.sync()
    assert not plain.full and plain.counts.deleted == len(doomed) == 30
    assert await wiki.indexed() == everything - doomed
    assert set(wiki.state.documents("wiki")) == everything - doomed
    assert (await wiki.sync()).counts.deleted == 0  # and nothing more the next time
