"""Confluence Cloud at size: the cursor listing, no request per page when nothing changed, and
deletions applied by a plain run (hundreds of pages here; bench.sync_scale runs 100,000), on
SQLite and PostgreSQL, with the records read a page at a time and never all at once."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from rag.errors import SyncError
from storage.db import Database
from storage.sync_state import DocumentRecord, SyncStateRepository
from sync import job as job_module
from sync.connectors.base import SourceConfig
from sync.connectors.confluence import ConfluenceConnector, ConfluenceSettings
from sync.job import JobConfig, SyncJob
from sync.report import SyncSummary
from tests.fakes.confluence_server import EMAIL, TOKEN, FakeConfluence
from tests.fakes.memory_index import MemoryIndex
from tests.storage.conftest import BACKENDS, empty_database
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


class CountingState(SyncStateRepository):
    """The repository, counting how the job reads the records."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.read_all = 0  # calls of documents(): every record of the source at once
        self.looked_up: list[str] = []
        self.id_pages = 0

    def documents(self, source: str) -> dict[str, DocumentRecord]:
        self.read_all += 1
        return super().documents(source)

    def document(self, source: str, doc_id: str) -> DocumentRecord | None:
        self.looked_up.append(doc_id)
        return super().document(source, doc_id)

    def document_ids(self, source: str, *, after: str = "", limit: int = 5000) -> list[str]:
        self.id_pages += 1
        return super().document_ids(source, after=after, limit=limit)

    def records(self) -> Mapping[str, DocumentRecord]:
        return super().documents("wiki")


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with empty_database(request, request.param, tmp_path_factory) as url:
        db = Database(url)
        db.upgrade()
        yield db
        db.dispose()


class Wiki:
    """A Cloud source over the fake: a SQLite or PostgreSQL sync state, an in-memory index."""

    def __init__(self, server: FakeConfluence, tmp_path: Path,
                 db: Database | None = None) -> None:
        self.server, self.index = server, MemoryIndex()
        if db is None:
            db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
            db.upgrade()
        self.state = CountingState(db)

    def job(self) -> SyncJob:
        source = SourceConfig("wiki", url=self.server.url + "/wiki", token=TOKEN)
        settings = ConfluenceSettings(deployment="cloud", email=EMAIL, spaces=SPACES,
                                      page_size=100, backoff_s=0.01)
        return SyncJob("wiki", ConfluenceConnector(source, settings), self.index,
                       HashEmbedder(), self.state, JobConfig())

    async def sync(self, full: bool = False) -> SyncSummary:
        return await self.job().run(full=full)

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
        confluence: FakeConfluence, tmp_path: Path, database: Database,
        monkeypatch: pytest.MonkeyPatch) -> None:
    wiki = Wiki(confluence, tmp_path, database)
    await wiki.sync()
    everything = set(confluence.pages)
    assert await wiki.indexed() == everything == set(wiki.state.records())
    doomed = set(sorted(everything)[::20])
    for page_id in doomed:
        del confluence.pages[page_id]
    monkeypatch.setattr(job_module, "ID_PAGE", 70)  # the 600 records in 9 pages, by key
    wiki.state.read_all = wiki.state.id_pages = 0
    plain = await wiki.sync()
    assert not plain.full and plain.counts.deleted == len(doomed) == 30
    assert await wiki.indexed() == everything - doomed
    assert set(wiki.state.records()) == everything - doomed
    assert wiki.state.read_all == 0 and wiki.state.id_pages == 10  # 9 and the empty one
    assert (await wiki.sync()).counts.deleted == 0  # and nothing more the next time


async def test_an_unchanged_plain_sync_reads_no_record_but_those_of_pages_it_lists(
        confluence: FakeConfluence, tmp_path: Path) -> None:
    wiki = Wiki(confluence, tmp_path)
    first = await wiki.sync()
    assert first.full and wiki.state.read_all == 1  # a full run reads them in one query
    wiki.state.read_all = 0
    edited = sorted(confluence.pages)[7]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    confluence.pages[edited] = dataclasses.replace(confluence.pages[edited], body="<p>New</p>",
                                                   updated=now)
    plain = await wiki.sync()
    assert not plain.full and (plain.counts.updated, plain.counts.unchanged) == (1, 0)
    # The listing since the checkpoint names the edited page alone (each space's newest
    # are older than the checkpoint's overlap): its record is the only one read.
    assert wiki.state.read_all == 0 and wiki.state.looked_up == [edited]


async def test_a_push_reads_the_records_of_the_pages_it_names_alone(
        confluence: FakeConfluence, tmp_path: Path) -> None:
    wiki = Wiki(confluence, tmp_path)
    await wiki.sync()
    wiki.state.read_all = 0
    edited, gone = sorted(confluence.pages)[3:5]
    confluence.pages[edited] = dataclasses.replace(confluence.pages[edited], body="<p>New</p>")
    del confluence.pages[gone]
    pushed = await wiki.job().run_ids([edited, gone])
    assert (pushed.counts.updated, pushed.counts.deleted) == (1, 1)
    assert wiki.state.read_all == 0 and sorted(wiki.state.looked_up) == [edited, gone]
    assert gone not in wiki.state.records() and gone not in await wiki.indexed()


async def test_an_id_listing_that_fails_midway_deletes_nothing(
        confluence: FakeConfluence, tmp_path: Path, database: Database) -> None:
    wiki = Wiki(confluence, tmp_path, database)
    await wiki.sync()
    everything = set(confluence.pages)
    doomed = set(sorted(everything)[::20])
    for page_id in doomed:
        del confluence.pages[page_id]
    listing = confluence._listing

    def broken(request: web.Request, rows: Any, row: Any = lambda r: r) -> web.Response:
        # The second page of any id listing: the first 250 ids were listed, the rest not.
        if "body-format" not in request.query and "cursor" in request.query:
            return web.json_response({"message": "boom"}, status=500)
        return listing(request, rows, row)

    confluence._listing = broken  # type: ignore[method-assign]
    with pytest.raises(SyncError):
        await wiki.sync()
    assert await wiki.indexed() == everything == set(wiki.state.records())
    confluence._listing = listing  # type: ignore[method-assign]
    after = await wiki.sync()
    assert after.counts.deleted == 30
    assert await wiki.indexed() == everything - doomed == set(wiki.state.records())
