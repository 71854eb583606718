"""Pushed documents sync through the runner: targeted, coalesced, under the sources' locks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path

from sync.connectors.base import DocumentFailure, DocumentGone, Fetched, SourceDocument
from sync.lock import SourceLock
from sync.push_queue import PushSyncs
from sync.runner import SyncRunner, SyncSource
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder, paragraph

SOURCE = "desk"


def doc(doc_id: str, topic: str) -> SourceDocument:
    return SourceDocument(doc_id, f"Article {doc_id}", paragraph(topic, 4))


class Catalogue:
    """An in-memory source that reads by id; clearing `gate` holds every fetch, so a flood
    of notifications can arrive while one sync is under way."""

    cheap_ids = True

    def __init__(self, *docs: SourceDocument) -> None:
        self.docs = {d.doc_id: d for d in docs}
        self.broken: set[str] = set()
        self.fetched: list[list[str]] = []
        self.listings = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        self.listings += 1
        for item in list(self.docs.values()):
            yield item

    async def list_ids(self) -> set[str]:
        return set(self.docs)

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        self.fetched.append(list(doc_ids))
        await self.gate.wait()
        for doc_id in doc_ids:
            if doc_id in self.broken:
                yield DocumentFailure(doc_id, f"article {doc_id}: HTTP 500")
            elif doc_id in self.docs:
                yield self.docs[doc_id]
            else:
                yield DocumentGone(doc_id)


class ListingOnly:
    """A source without `fetch`: pushes fall back to an incremental run."""

    cheap_ids = True

    def __init__(self, catalogue: Catalogue) -> None:
        self.inner = catalogue

    def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        return self.inner.documents(since)

    async def list_ids(self) -> set[str]:
        return await self.inner.list_ids()


def queue(tmp_path: Path, connector: object, index: MemoryIndex,
          state: MemorySyncState, **kw: float) -> PushSyncs:
    runner = SyncRunner([SyncSource(SOURCE, connector)], index, HashEmbedder(),  # type: ignore[arg-type]
                        state, tmp_path / "locks")
    return PushSyncs(runner, gather_s=0.01, **kw)  # type: ignore[arg-type]


async def test_pushed_ids_add_update_and_delete_without_moving_the_checkpoint(
        tmp_path: Path) -> None:
    source = Catalogue(doc("1", "refunds"), doc("2", "shipping"))
    index, state = MemoryIndex(), MemorySyncState()
    pushes = queue(tmp_path, source, index, state)
    pushes.submit(SOURCE, ["1", "2"])
    await pushes.idle()
    assert set(await index.list_documents(SOURCE)) == {"1", "2"}
    source.docs["1"] = doc("1", "returns")
    del source.docs["2"]
    pushes.submit(SOURCE, ["1", "2"])
    await pushes.idle()
    assert set(await index.list_documents(SOURCE)) == {"1"}
    assert "returns" in " ".join(c.text for c, _ in index.chunks.values())
    assert set(state.docs[SOURCE]) == {"1"}
    assert source.listings == 0 and state.runs == []  # no listing, no run: checkpoint kept


async def test_a_flood_about_one_document_is_one_sync_at_a_time(tmp_path: Path) -> None:
    source = Catalogue(doc("1", "refunds"), doc("2", "shipping"))
    pushes = queue(tmp_path, source, MemoryIndex(), MemorySyncState())
    source.gate.clear()
    pushes.submit(SOURCE, ["1"])
    while not source.fetched:  # the first sync has started and waits on the platform
        await asyncio.sleep(0.01)
    for _ in range(200):
        pushes.submit(SOURCE, ["1"])
    pushes.submit(SOURCE, ["2"])
    source.gate.set()
    await pushes.idle()
    assert source.fetched == [["1"], ["1", "2"]]


async def test_an_unreadable_document_is_reported_and_the_rest_syncs(tmp_path: Path) -> None:
    source = Catalogue(doc("1", "refunds"), doc("2", "shipping"))
    source.broken.add("1")
    index, state = MemoryIndex(), MemorySyncState()
    pushes = queue(tmp_path, source, index, state)
    pushes.submit(SOURCE, ["1", "2"])
    await pushes.idle()
    assert set(await index.list_documents(SOURCE)) == {"2"}
    assert state.docs[SOURCE]["1"].status == "failed"
    assert "article 1: HTTP 500" in state.docs[SOURCE]["1"].error


async def test_a_source_without_fetch_gets_an_incremental_run(tmp_path: Path) -> None:
    source = Catalogue(doc("1", "refunds"))
    index, state = MemoryIndex(), MemorySyncState()
    pushes = queue(tmp_path, ListingOnly(source), index, state)
    pushes.submit(SOURCE, ["1"])
    pushes.submit(SOURCE, [], resync=True)
    await pushes.idle()
    assert source.listings == 1 and source.fetched == []
    assert [r.status for r in state.runs] == ["ok"]
    assert set(await index.list_documents(SOURCE)) == {"1"}


async def test_a_push_waits_for_a_sync_another_process_holds(tmp_path: Path) -> None:
    source = Catalogue(doc("1", "refunds"))
    index = MemoryIndex()
    pushes = queue(tmp_path, source, index, MemorySyncState(), busy_retry_s=0.05)
    with SourceLock(tmp_path / "locks", SOURCE):  # `sift sync` in another process
        pushes.submit(SOURCE, ["1"])
        await asyncio.sleep(0.2)
        assert await index.list_documents(SOURCE) == {}
    await asyncio.wait_for(pushes.idle(), 5)
    assert set(await index.list_documents(SOURCE)) == {"1"}
