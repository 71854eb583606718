"""The sync job against the in-memory fakes and against real Weaviate + the storage database."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rag.errors import SyncError
from rag.index import WeaviateIndex
from rag.types import Vector
from storage.db import Database
from storage.sync_state import SyncStateRepository
from sync.chunk import CHUNKER_VERSION
from sync.connectors.base import DocumentFailure, Fetched, SourceDocument
from sync.job import SyncJob
from sync.ports import SyncState
from tests.conftest import index_config, unique_collection
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder, article, paragraph, write
from tests.sync.harness import CONFIG, SOURCE, FailingEmbedder, SpyIndex, fill, job, snapshot
from tests.sync.pdf import make_pdf
from weaviate_server.process import ManagedWeaviate


@dataclass
class Backend:
    """An index, an embedder and a state store; `fresh()` gives an empty pair for a clean run."""

    index: SpyIndex
    embedder: Any
    state: SyncState
    fresh: Callable[[], Awaitable[tuple[Any, SyncState]]]


@pytest.fixture(params=["memory", pytest.param("real", marks=pytest.mark.weaviate)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "memory":
        async def fresh_memory() -> tuple[Any, SyncState]:
            return MemoryIndex(), MemorySyncState()

        yield Backend(SpyIndex(MemoryIndex()), HashEmbedder(), MemorySyncState(), fresh_memory)
        return
    server: ManagedWeaviate = request.getfixturevalue("weaviate_server")
    embedder = request.getfixturevalue("embedder")
    opened: list[tuple[WeaviateIndex, Database]] = []

    async def fresh_real() -> tuple[Any, SyncState]:
        index = WeaviateIndex(index_config(server, unique_collection("Sync")), embedder.name,
                              embedder.dimension)
        await index.connect()
        db = Database(f"sqlite:///{tmp_path / f'sift{len(opened)}.db'}")
        db.upgrade()
        opened.append((index, db))
        return index, SyncStateRepository(db)

    index, state = await fresh_real()
    yield Backend(SpyIndex(index), embedder, state, fresh_real)
    for index, db in opened:
        await index.drop()
        await index.close()
        db.dispose()


async def clean_run(backend: Backend, root: Path) -> dict[str, Any]:
    index, state = await backend.fresh()
    await job(root, index, backend.embedder, state).run(full=True)
    return await snapshot(index)


def touch(path: Path) -> None:
    now = time.time()
    os.utime(path, (now, now))


async def test_add_then_unchanged_writes_nothing(backend: Backend, kb: Path) -> None:
    fill(kb)
    first = await job(kb, backend.index, backend.embedder, backend.state).run()
    assert first.full and first.counts.added == 6 and first.counts.failed == 0
    assert first.counts.chunks_written == len(await snapshot(backend.index)) > 6
    writes_before = list(backend.index.writes)
    for path in kb.rglob("*.*"):
        touch(path)  # read again by the incremental run, but the content is the same
    again = await job(kb, backend.index, backend.embedder, backend.state).run()
    full = await job(kb, backend.index, backend.embedder, backend.state).run(full=True)
    assert (again.counts.unchanged, full.counts.unchanged) == (6, 6)
    assert again.counts.chunks_written == full.counts.chunks_written == 0
    assert backend.index.writes == writes_before
    assert again.chunks_embedded == full.chunks_embedded == 0


async def test_modify_and_shrink_replaces_chunks_without_leftovers(backend: Backend,
                                                                   kb: Path) -> None:
    fill(kb)
    await job(kb, backend.index, backend.embedder, backend.state).run()
    write(kb, "eng/deploy.md", article("Deploying", "Deploys are now one click."), age_s=0)
    write(kb, "it/new.md", article("New page", paragraph("new", 2)), age_s=0)
    summary = await job(kb, backend.index, backend.embedder, backend.state).run()
    assert (summary.counts.updated, summary.counts.added, summary.counts.unchanged) == (1, 1, 0)
    rows = await snapshot(backend.index)
    deploy = [v for k, v in rows.items() if k.startswith(f"{SOURCE}:eng/deploy.md:")]
    assert [text for *_, text in deploy] == ["Deploys are now one click."]
    assert rows == await clean_run(backend, kb)


async def test_deleted_files_are_pruned_by_a_plain_sync(backend: Backend, kb: Path) -> None:
    """A folder's id listing is a directory walk, so every run prunes, not only --full."""
    fill(kb)
    await job(kb, backend.index, backend.embedder, backend.state).run()
    (kb / "it/vpn.md").unlink()
    incremental = await job(kb, backend.index, backend.embedder, backend.state).run()
    assert (incremental.full, incremental.counts.deleted) == (False, 1)
    assert "it/vpn.md" not in backend.state.documents(SOURCE)
    assert await snapshot(backend.index) == await clean_run(backend, kb)
    full = await job(kb, backend.index, backend.embedder, backend.state).run(full=True)
    assert (full.counts.deleted, full.counts.unchanged) == (0, 5)


async def test_corrupt_files_are_reported_and_keep_their_chunks(backend: Backend,
                                                                kb: Path) -> None:
    fill(kb)
    write(kb, "manual.pdf", make_pdf(["Reset the printer by holding the button."]))
    await job(kb, backend.index, backend.embedder, backend.state).run()
    before = await snapshot(backend.index)
    write(kb, "manual.pdf", b"%PDF-1.4 truncated garbage", age_s=0)
    write(kb, "hr/leave.md", "---\ndoc_id: hr-leave\ntitle: [broken\n---\nBody", age_s=0)
    write(kb, "it/extra.md", "# Extra\n\nStill synced.", age_s=0)
    summary = await job(kb, backend.index, backend.embedder, backend.state).run(full=True)
    assert (summary.counts.failed, summary.counts.added, summary.counts.deleted) == (2, 1, 0)
    assert any("manual.pdf" in e and "not a readable PDF" in e for e in summary.errors)
    assert any("hr/leave.md" in e and "front matter" in e for e in summary.errors)
    after = await snapshot(backend.index)
    kept = {k: v for k, v in before.items() if v[0] in ("manual.pdf", "hr-leave")}
    assert kept and all(after[k] == v for k, v in kept.items())
    state = backend.state.documents(SOURCE)
    assert state["manual.pdf"].status == "failed" and state["hr-leave"].status == "failed"


async def test_failure_after_some_batches_then_rerun_equals_clean_run(backend: Backend,
                                                                      kb: Path) -> None:
    fill(kb)
    with pytest.raises(SyncError) as caught:
        await job(kb, backend.index, FailingEmbedder(backend.embedder, 3),
                  backend.state).run()
    assert "The sync of 'kb' stopped: injected failure" in caught.value.user_message
    assert "(reference: " in caught.value.user_message
    assert backend.index.upserts == 2  # two batches went in before the crash
    await job(kb, backend.index, backend.embedder, backend.state).run()
    assert await snapshot(backend.index) == await clean_run(backend, kb)


class CountingEmbedder(FailingEmbedder):
    """Counts the texts it embeds (and never fails)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, fail_on_call=0)
        self.texts = 0

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.texts += len(texts)
        return await super().embed_documents(texts)


async def test_a_long_document_stopped_half_way_resumes_where_it_stopped(
        backend: Backend, kb: Path) -> None:
    write(kb, "manual.md", article("Manual", paragraph("manual", 120)))  # many batches of 8
    with pytest.raises(SyncError):
        await job(kb, backend.index, FailingEmbedder(backend.embedder, 3),
                  backend.state).run()
    assert backend.index.upserts == 2  # 16 of its chunks went in before the stop
    counting = CountingEmbedder(backend.embedder)
    summary = await job(kb, backend.index, counting, backend.state).run()
    clean = await clean_run(backend, kb)
    assert len(clean) > 24 and counting.texts == len(clean) - 16  # not from its first chunk
    assert await snapshot(backend.index) == clean
    assert summary.counts.chunks_written == len(clean) - 16 and summary.counts.failed == 0
    [recorded] = (await asyncio.to_thread(backend.state.documents, SOURCE)).values()
    assert recorded.chunk_count == len(clean)  # the whole document, not the part just written


async def test_failure_during_an_update_then_rerun_equals_clean_run(backend: Backend,
                                                                    kb: Path) -> None:
    fill(kb)
    await job(kb, backend.index, backend.embedder, backend.state).run()
    write(kb, "eng/deploy.md", article("Deploying", paragraph("shorter", 6)), age_s=0)
    write(kb, "it/vpn.md", article("VPN", paragraph("tunnel", 20)), age_s=0)
    backend.index.fail_on_upsert = backend.index.upserts + 2
    tiny_batches = replace(CONFIG, embed_batch=2)  # the first document commits, then a crash
    with pytest.raises(SyncError):
        await job(kb, backend.index, backend.embedder, backend.state, tiny_batches).run()
    assert backend.state.documents(SOURCE)["eng/deploy.md"].chunk_count > 0
    backend.index.fail_on_upsert = 0
    await job(kb, backend.index, backend.embedder, backend.state).run()
    assert await snapshot(backend.index) == await clean_run(backend, kb)


async def test_a_new_chunker_version_is_embedded_again_by_the_next_full_pass(
        kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(kb)
    index, state, embedder = MemoryIndex(), MemorySyncState(), HashEmbedder()
    first = await job(kb, index, embedder, state).run()
    monkeypatch.setattr("sync.chunk.CHUNKER_VERSION", CHUNKER_VERSION + 1)  # an upgrade
    quiet = await job(kb, index, embedder, state).run()  # nothing changed at the source
    full = await job(kb, index, embedder, state).run(full=True)
    assert quiet.chunks_embedded == 0
    assert (full.counts.updated, full.counts.unchanged) == (6, 0)
    assert full.chunks_embedded == first.chunks_embedded > 6


async def test_dry_run_reports_without_writing(kb: Path) -> None:
    fill(kb)
    index, state, embedder = SpyIndex(MemoryIndex()), MemorySyncState(), HashEmbedder()
    dry = await job(kb, index, embedder, state).run(dry_run=True)
    assert (dry.counts.added, dry.dry_run) == (6, True) and dry.counts.chunks_written > 6
    assert index.writes == [] and embedder.calls == [] and state.writes == 0
    assert state.runs == []
    await job(kb, index, embedder, state).run()
    (kb / "it/printers.txt").unlink()
    write(kb, "it/vpn.md", "# VPN\n\nChanged.", age_s=0)
    dry = await job(kb, index, embedder, state).run(full=True, dry_run=True)
    assert (dry.counts.updated, dry.counts.deleted, dry.counts.unchanged) == (1, 1, 4)


async def test_embedding_batches_span_documents(kb: Path) -> None:
    for i in range(20):
        write(kb, f"doc{i}.md", f"# Doc {i}\n\nOne short line {i}.")
    embedder = HashEmbedder()
    await job(kb, MemoryIndex(), embedder, MemorySyncState()).run()
    assert embedder.calls == [8, 8, 4]


async def test_runs_are_logged_with_counts_and_errors(kb: Path) -> None:
    fill(kb)
    write(kb, "bad.md", "---\ntitle: [x\n---\n")
    state = MemorySyncState()
    await job(kb, MemoryIndex(), HashEmbedder(), state).run()
    [run] = state.runs
    assert run.status == "ok" and run.full
    assert (run.counts.added, run.counts.failed) == (6, 1)
    assert len(run.errors) == 1 and "bad.md" in run.errors[0]


async def test_duplicate_doc_ids_keep_the_first(kb: Path) -> None:
    write(kb, "a.md", "---\ndoc_id: same\n---\n# First")
    write(kb, "b.md", "---\ndoc_id: same\n---\n# Second")
    index = MemoryIndex()
    summary = await job(kb, index, HashEmbedder(), MemorySyncState()).run()
    assert (summary.counts.added, summary.counts.failed) == (1, 1)
    assert "duplicate doc_id 'same'" in summary.errors[0]
    assert [c.text for c, _ in index.chunks.values()] == ["# First"]


async def test_failed_run_is_recorded_and_not_a_checkpoint(kb: Path) -> None:
    fill(kb)
    state = MemorySyncState()
    with pytest.raises(SyncError):
        await job(kb, MemoryIndex(), FailingEmbedder(HashEmbedder(), 1), state).run()
    assert [r.status for r in state.runs] == ["failed"]
    assert "injected failure" in state.runs[0].errors[-1]
    assert state.last_success(SOURCE) is None


class ListConnector:
    """Yields what it is given: failures a real connector could produce."""

    cheap_ids = False

    def __init__(self, items: list[Fetched]) -> None:
        self.items = items

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        for item in self.items:
            yield item

    async def list_ids(self) -> set[str]:
        return {i.doc_id for i in self.items if i.doc_id}


async def test_items_without_an_id_are_counted_but_not_recorded() -> None:
    state = MemorySyncState()
    items: list[Fetched] = [DocumentFailure("", "an item without 'id' was skipped"),
                            DocumentFailure("", "another"),
                            SourceDocument("a", "A", "# A\n\nText.")]
    summary = await SyncJob("api", ListConnector(items), MemoryIndex(), HashEmbedder(),
                            state).run()
    assert (summary.counts.failed, summary.counts.added) == (2, 1)
    assert set(state.documents("api")) == {"a"}


async def test_a_warning_is_kept_with_the_document_until_it_is_fixed(backend: Backend,
                                                                   kb: Path) -> None:
    write(kb, "hr.md", article("Leave", paragraph("leave", 2), acess="hr"))
    await job(kb, backend.index, backend.embedder, backend.state).run()
    kept = (await asyncio.to_thread(backend.state.documents, SOURCE))["hr.md"]
    assert kept.status == "ok" and "did you mean 'access'" in kept.warning
    write(kb, "hr.md", article("Leave", paragraph("leave", 2), access="hr"))
    await job(kb, backend.index, backend.embedder, backend.state).run(full=True)
    fixed = (await asyncio.to_thread(backend.state.documents, SOURCE))["hr.md"]
    assert fixed.warning == ""
