"""A sync writes each batch while it embeds the next: in order, never after a failure, and the
documents of a batch are recorded only once its chunks are in."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from rag.errors import SyncError
from rag.types import Chunk, Vector
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder, write
from tests.sync.harness import SOURCE, SpyIndex, job, snapshot

DOCUMENTS = 24  # one chunk each: three batches of 8 (the harness's embed_batch)


def corpus(kb: Path) -> None:
    for i in range(DOCUMENTS):
        write(kb, f"doc{i:02}.md", f"# Doc {i}\n\nThe short page number {i}.")


class SlowIndex(SpyIndex):
    """From its `hold_from`-th upsert on, each waits until `release` is set; `begun` tells
    that a held one has begun."""

    def __init__(self, hold_from: int = 1) -> None:
        super().__init__(MemoryIndex())
        self.hold_from = hold_from
        self.release = asyncio.Event()
        self.begun = asyncio.Event()
        self.entered = 0

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int:
        self.entered += 1
        if self.entered >= self.hold_from:
            self.begun.set()
            await self.release.wait()
        return await super().upsert(chunks, vectors)


class RecordingEmbedder(HashEmbedder):
    """Notes each call in the shared `events` list, next to the index's writes."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.events.append(f"embed {len(texts)}")
        return await super().embed_documents(texts)


async def test_the_next_batch_embeds_while_the_one_before_is_written(kb: Path) -> None:
    corpus(kb)
    index, embedder = SlowIndex(), HashEmbedder()
    running = asyncio.create_task(job(kb, index, embedder, MemorySyncState()).run())
    await asyncio.wait_for(index.begun.wait(), 10)
    # The first batch's upsert is held; the second batch is embedded all the same.
    for _ in range(200):
        if len(embedder.calls) >= 2:
            break
        await asyncio.sleep(0.01)
    assert embedder.calls[:2] == [8, 8]
    assert index.entered == 1  # and its write waits for the first one's, not beside it
    index.release.set()
    summary = await asyncio.wait_for(running, 10)
    assert summary.counts.added == DOCUMENTS and index.writes == ["upsert 8"] * 3


async def test_writes_keep_their_order_and_none_follows_a_failed_one(kb: Path) -> None:
    corpus(kb)
    events: list[str] = []
    index, state = SpyIndex(MemoryIndex(), writes=events, fail_on_upsert=2), MemorySyncState()
    with pytest.raises(SyncError, match="injected failure during upsert"):
        await job(kb, index, RecordingEmbedder(events), state).run()
    # The third batch may have been embedded meanwhile, but it is never written.
    assert [e for e in events if e.startswith("upsert")] == ["upsert 8", "upsert 8"]
    assert events.count("embed 8") >= 2
    recorded = set(state.documents(SOURCE))
    assert len(recorded) == 8  # the first batch only: the second's chunks did not all go in
    assert {c.doc_id for c, _ in index.inner.chunks.values()} >= recorded
    [run] = state.runs
    assert run.status == "failed"


async def test_a_failed_embedding_lets_the_write_in_progress_finish(kb: Path) -> None:
    """The batch before the failure is kept, and recorded, as before writes overlapped."""
    corpus(kb)
    index, state = SlowIndex(hold_from=2), MemorySyncState()

    class FailingThird(HashEmbedder):
        async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
            if len(self.calls) == 2:  # the second batch's write is held in progress
                self.calls.append(-1)
                asyncio.get_running_loop().call_later(0.05, index.release.set)
                raise RuntimeError("injected failure during embedding")
            return await super().embed_documents(texts)

    with pytest.raises(SyncError, match="injected failure during embedding"):
        await job(kb, index, FailingThird(), state).run()
    assert index.writes == ["upsert 8", "upsert 8"]
    assert len(state.documents(SOURCE)) == 16


async def test_cancelling_a_run_cancels_its_write_and_the_rerun_converges(kb: Path) -> None:
    corpus(kb)
    index, state = SlowIndex(), MemorySyncState()
    running = asyncio.create_task(job(kb, index, HashEmbedder(), state).run())
    await asyncio.wait_for(index.begun.wait(), 10)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    index.release.set()  # were the write still running, it would go in now
    await asyncio.sleep(0.05)
    assert index.upserts == 0 and state.documents(SOURCE) == {}
    assert [r.status for r in state.runs] == ["failed"]
    await job(kb, index, HashEmbedder(), state).run()
    clean = SpyIndex(MemoryIndex())
    await job(kb, clean, HashEmbedder(), MemorySyncState()).run()
    assert await snapshot(index) == await snapshot(clean)
    assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing left behind
