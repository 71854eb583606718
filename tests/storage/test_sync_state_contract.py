"""The sync state's contract (sync/ports.SyncState), held the same by the repository on SQLite
and PostgreSQL and by the in-memory fake the connector and job tests run on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from storage.db import Database
from storage.sync_state import SyncStateRepository
from sync.ports import RunCounts, SyncState
from tests.fakes.memory_sync_state import MemorySyncState
from tests.storage.conftest import BACKENDS, empty_database

EDITED = datetime(2026, 10, 1, 7, 30, tzinfo=UTC)


@pytest.fixture(params=[pytest.param("memory", id="memory"), *BACKENDS])
def state(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncState]:
    if request.param == "memory":
        yield MemorySyncState()
        return
    with empty_database(request, request.param, tmp_path_factory) as url:
        db = Database(url)
        db.upgrade()
        yield SyncStateRepository(db)
        db.dispose()


def test_a_document_is_recorded_replaced_and_forgotten(state: SyncState) -> None:
    state.record_document("kb", "a", content_hash="h1", chunk_count=3, updated_at=EDITED)
    state.record_document("kb", "b", content_hash="h2", chunk_count=1, updated_at=None,
                          status="failed", error="bad front matter")
    state.record_document("kb", "a", content_hash="h3", chunk_count=2, updated_at=None,
                          restricted=True, warning="access: [hrr] names no group")
    docs = state.documents("kb")
    assert set(docs) == {"a", "b"}
    a, b = docs["a"], docs["b"]
    assert (a.content_hash, a.chunk_count, a.status, a.restricted, a.warning) == (
        "h3", 2, "ok", True, "access: [hrr] names no group")
    assert (b.status, b.error, b.chunk_count) == ("failed", "bad front matter", 1)
    state.forget_document("kb", "a")
    state.forget_document("kb", "never-there")  # forgetting nothing is no error
    assert set(state.documents("kb")) == {"b"}


def test_an_edit_time_comes_back_as_the_same_instant(state: SyncState) -> None:
    state.record_document("kb", "a", content_hash="h", chunk_count=1, updated_at=EDITED)
    stored = state.documents("kb")["a"].updated_at
    assert stored is not None and stored.astimezone(UTC) == EDITED


def test_forgetting_a_source_leaves_the_others(state: SyncState) -> None:
    for source in ("kb", "wiki"):
        state.record_document(source, "a", content_hash="h", chunk_count=1, updated_at=None)
    state.forget_source("kb")
    assert state.documents("kb") == {}
    assert set(state.documents("wiki")) == {"a"}


def test_one_document_is_looked_up_by_its_id(state: SyncState) -> None:
    assert not state.has_documents("kb") and state.document("kb", "a") is None
    state.record_document("kb", "a", content_hash="h1", chunk_count=3, updated_at=EDITED,
                          restricted=True, warning="w")
    state.record_document("wiki", "b", content_hash="h2", chunk_count=1, updated_at=None)
    a = state.document("kb", "a")
    assert a is not None and (a.doc_id, a.content_hash, a.chunk_count, a.status,
                              a.restricted, a.warning) == ("a", "h1", 3, "ok", True, "w")
    assert state.document("kb", "b") is None  # another source's
    assert state.has_documents("kb") and not state.has_documents("other")
    state.forget_document("kb", "a")
    assert state.document("kb", "a") is None and not state.has_documents("kb")


def test_the_ids_are_read_a_page_at_a_time_by_key(state: SyncState) -> None:
    ids = [f"page-{n}" for n in range(11)] + ["Z", "a b", "ü"]
    for doc_id in ids:
        state.record_document("kb", doc_id, content_hash="h", chunk_count=1, updated_at=None)
    state.record_document("wiki", "page-0b", content_hash="h", chunk_count=1, updated_at=None)
    read: list[str] = []
    pages = 0
    while page := state.document_ids("kb", after=read[-1] if read else "", limit=4):
        assert len(page) <= 4
        pages += 1
        read += page
        if pages == 2:  # forgetting records between pages moves no page
            state.forget_document("kb", page[0])
            state.forget_document("kb", read[0])
    # Each once (an OFFSET would skip two after the forgetting), and none of wiki's.
    assert pages == 4 and sorted(read) == sorted(ids)


def test_synced_sources_are_those_with_documents_or_runs(state: SyncState) -> None:
    assert state.synced_sources() == set()
    state.record_document("kb", "a", content_hash="h", chunk_count=1, updated_at=None)
    state.finish_run(state.start_run("wiki", full=True), RunCounts(), [], status="failed")
    assert state.synced_sources() == {"kb", "wiki"}


def test_the_checkpoint_and_cursor_come_from_the_last_successful_run(state: SyncState) -> None:
    assert state.last_success("kb") is None and state.last_cursor("kb") is None
    first = state.start_run("kb", full=True)
    state.finish_run(first, RunCounts(added=2), [], status="ok", cursor="delta-1")
    checkpoint = state.last_success("kb")
    assert checkpoint is not None
    assert checkpoint == state.last_started("kb") == state.last_started("kb", full=True)
    assert state.last_cursor("kb") == "delta-1"

    failed = state.start_run("kb", full=False)
    state.finish_run(failed, RunCounts(failed=1), ["boom"], status="failed", cursor="delta-x")
    assert state.last_success("kb") == checkpoint  # a failed run moves nothing forward
    assert state.last_cursor("kb") == "delta-1"
    latest = state.last_started("kb")
    assert latest is not None and latest >= checkpoint
    assert state.last_started("kb", full=True) == checkpoint  # the full pass is still the first

    again = state.start_run("kb", full=False)
    assert len({first, failed, again}) == 3
    state.finish_run(again, RunCounts(), [], status="ok", cursor="delta-2")
    assert state.last_cursor("kb") == "delta-2"
    assert state.last_success("kb") == state.last_started("kb")
    assert state.last_success("other") is None  # runs are per source
