"""Large documents: embedding batches split within a document, a size limit reported by the
file's name, a clean stop at a batch boundary, and runs killed before they finished."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from storage.db import Database
from storage.sync_state import SyncStateRepository
from sync.connectors.base import DocumentFailure
from sync.connectors.folder import FolderConnector
from sync.interrupt import StopRequest, SyncInterrupted
from sync.job import SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.sync.conftest import HashEmbedder, article, paragraph, write
from tests.sync.harness import CONFIG, SOURCE, SpyIndex


@pytest.fixture
def state(tmp_path: Path) -> SyncStateRepository:
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    return SyncStateRepository(db)


def long_document(kb: Path) -> None:
    write(kb, "big/manual.md", article("Manual", paragraph("manual", 400)))
    write(kb, "small.md", article("Small", paragraph("small", 3)))


async def test_one_long_document_is_embedded_in_bounded_batches(
        kb: Path, state: SyncStateRepository, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sync.job")
    long_document(kb)
    embedder, index = HashEmbedder(), SpyIndex(MemoryIndex())
    job = SyncJob(SOURCE, FolderConnector(kb), index, embedder, state, CONFIG)
    summary = await job.run()
    assert summary.counts.chunks_written > 10 * CONFIG.embed_batch  # really a long document
    assert max(embedder.calls) <= CONFIG.embed_batch
    assert sum(embedder.calls) == summary.counts.chunks_written
    upserts = [int(w.split()[1]) for w in index.writes if w.startswith("upsert")]
    assert max(upserts) <= CONFIG.embed_batch
    progress = [r.getMessage() for r in caplog.records if "chunks embedded" in r.getMessage()]
    assert len(progress) == len(upserts) and "big/manual.md: 8/" in progress[0]


async def test_a_file_over_the_size_limit_is_skipped_and_named(
        kb: Path, state: SyncStateRepository) -> None:
    long_document(kb)
    config = replace(CONFIG, max_file_bytes=20_000)
    embedder = HashEmbedder()
    summary = await SyncJob(SOURCE, FolderConnector(kb), MemoryIndex(), embedder, state,
                            config).run()
    assert summary.counts.added == 1 and summary.counts.failed == 1
    [error] = summary.errors
    assert "big/manual.md" in error and "SIFT_SYNC__MAX_FILE_MB" in error
    assert state.documents(SOURCE)["big/manual.md"].status == "failed"


class StoppingEmbedder(HashEmbedder):
    """Asks for a stop (as Ctrl-C would) while its `after`-th batch is being embedded."""

    def __init__(self, stop: StopRequest, after: int) -> None:
        super().__init__()
        self.stop, self.after = stop, after

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if len(self.calls) + 1 == self.after:
            self.stop.set("SIGINT")
        return await super().embed_documents(texts)


async def test_a_stop_request_ends_the_run_at_the_next_batch_as_interrupted(
        kb: Path, state: SyncStateRepository) -> None:
    long_document(kb)
    stop = StopRequest()
    embedder = StoppingEmbedder(stop, after=3)
    job = SyncJob(SOURCE, FolderConnector(kb), MemoryIndex(), embedder, state, CONFIG,
                  stop=stop)
    with pytest.raises(SyncInterrupted) as stopped:
        await job.run()
    assert "interrupted" in stopped.value.user_message
    assert len(embedder.calls) == 3  # the batch under way finished, no other began
    [run] = state.runs(SOURCE)
    assert run.status == "interrupted"
    assert "big/manual.md" not in state.documents(SOURCE)  # redone by the next run


def test_runs_left_running_by_a_kill_are_marked_abandoned(state: SyncStateRepository) -> None:
    killed = state.start_run(SOURCE, full=True)  # its process died: never finished
    other = state.start_run("other", full=False)
    state.start_run(SOURCE, full=False)
    statuses = {r.id: r.status for r in state.runs()}
    assert statuses[killed] == "abandoned" and statuses[other] == "running"


async def test_a_file_over_the_limit_is_refused_before_it_is_read(kb: Path) -> None:
    """A sparse 100 MB file costs no disk; read whole (as it once was) it cost 100 MB of
    memory, and more to decode and split, only to be skipped."""
    import tracemalloc

    long_document(kb)
    with (kb / "huge.md").open("wb") as handle:
        handle.truncate(100 * 2**20)
    connector = FolderConnector(kb, max_file_bytes=20 * 2**20)

    tracemalloc.start()
    try:
        items = [item async for item in connector.documents(None)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    [refused] = [i for i in items if isinstance(i, DocumentFailure)]
    assert refused == DocumentFailure("huge.md", "huge.md: the file is 100.0 MB, over the "
                                      "20 MB limit (SIFT_SYNC__MAX_FILE_MB): skipped")
    assert len(items) == 3 and peak < 5 * 2**20
