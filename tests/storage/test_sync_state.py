"""Sync state: document hashes per source and the sync_runs log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from storage.db import Database
from storage.errors import UnknownSyncRun
from storage.sync_state import DocumentRecord, SyncStateRepository
from sync.ports import RunCounts
from tests.storage.clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def state(database: Database, clock: Clock) -> SyncStateRepository:
    return SyncStateRepository(database, clock=clock)


def test_documents_are_recorded_replaced_and_forgotten(state: SyncStateRepository,
                                                       clock: Clock) -> None:
    edited = datetime(2026, 10, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    state.record_document("kb", "a", content_hash="h1", chunk_count=3, updated_at=edited)
    state.record_document("kb", "b", content_hash="h2", chunk_count=1, updated_at=None,
                          status="failed", error="parse error")
    state.record_document("other", "a", content_hash="h9", chunk_count=9, updated_at=None)
    clock.advance(minutes=5)
    state.record_document("kb", "a", content_hash="h1b", chunk_count=4, updated_at=edited)
    docs = state.documents("kb")
    assert docs == {
        "a": DocumentRecord("a", "h1b", 4, "ok", edited, clock.now),
        "b": DocumentRecord("b", "h2", 1, "failed", None, clock.now - timedelta(minutes=5),
                            "parse error"),
    }
    assert docs["a"].updated_at == datetime(2026, 10, 1, 7, 30, tzinfo=UTC)
    state.forget_document("kb", "a")
    state.forget_document("kb", "never-there")
    assert set(state.documents("kb")) == {"b"}
    assert set(state.documents("other")) == {"a"}
    assert state.documents("unknown") == {}


def test_runs_and_the_incremental_checkpoint(state: SyncStateRepository, clock: Clock) -> None:
    assert state.last_success("kb") is None
    first = state.start_run("kb", full=True)
    state.finish_run(first, RunCounts(added=3, chunks_written=7), [], status="ok")
    clock.advance(hours=1)
    second = state.start_run("kb", full=False)
    state.finish_run(second, RunCounts(failed=1), ["doc x: boom"], status="failed")
    clock.advance(hours=1)
    state.start_run("kb", full=False)  # still running
    other = state.start_run("wiki", full=True)
    state.finish_run(other, RunCounts(), [], status="ok")
    assert state.last_success("kb") == clock.now - timedelta(hours=2)
    assert state.last_success("wiki") == clock.now
    runs = {r.id: r for r in state.runs("kb")}
    assert (runs[first].status, runs[first].full, runs[first].added,
            runs[first].chunks_written, runs[first].finished_at) == (
        "ok", True, 3, 7, clock.now - timedelta(hours=2))
    assert (runs[second].status, runs[second].failed, runs[second].errors) == (
        "failed", 1, ["doc x: boom"])
    assert state.running() == ["kb"]  # the third run of kb; wiki's finished


def test_a_run_killed_before_it_finished_stops_counting_as_running_at_the_next(
        state: SyncStateRepository) -> None:
    assert state.running() == []
    state.start_run("kb", full=True)  # its process dies here
    assert state.running() == ["kb"]
    again = state.start_run("kb", full=True)
    state.finish_run(again, RunCounts(), [], status="ok")
    assert state.running() == []


def test_only_a_source_that_never_finished_a_sync_counts_as_first_syncing(
        state: SyncStateRepository, clock: Clock) -> None:
    assert state.first_syncs_running() == []
    wiki = state.start_run("wiki", full=True)
    state.start_run("zendesk", full=True)
    assert state.first_syncs_running() == ["wiki", "zendesk"]
    state.finish_run(wiki, RunCounts(added=3), [], status="ok")
    clock.advance(hours=1)
    state.start_run("wiki", full=False)  # a later run: the index already holds wiki
    assert state.first_syncs_running() == ["zendesk"]
    failed = state.start_run("zendesk", full=True)
    state.finish_run(failed, RunCounts(), ["401 from the API"], status="failed")
    assert state.first_syncs_running() == []  # not under way: a failure, not "still reading"


def test_the_cursor_of_the_last_successful_run_is_handed_back(state: SyncStateRepository,
                                                               clock: Clock) -> None:
    assert state.last_cursor("sp") is None
    first = state.start_run("sp", full=True)
    state.finish_run(first, RunCounts(added=1), [], status="ok", cursor='{"d": "link-1"}')
    clock.advance(hours=1)
    failed = state.start_run("sp", full=False)
    state.finish_run(failed, RunCounts(), ["boom"], status="failed", cursor='{"d": "link-2"}')
    assert state.last_cursor("sp") == '{"d": "link-1"}'
    clock.advance(hours=1)
    plain = state.start_run("sp", full=False)
    state.finish_run(plain, RunCounts(), [], status="ok")
    assert state.last_cursor("sp") is None  # the latest success stored none: start over
    assert state.last_cursor("other") is None


def test_errors_are_capped(state: SyncStateRepository) -> None:
    run = state.start_run("kb", full=True)
    state.finish_run(run, RunCounts(failed=500), [f"e{i}" + "x" * 5000 for i in range(500)],
                     status="failed")
    errors = state.runs("kb")[0].errors
    assert len(errors) == 100 and all(len(e) == 1000 for e in errors)


def test_finishing_an_unknown_run(state: SyncStateRepository) -> None:
    with pytest.raises(UnknownSyncRun, match="No sync run with id 77"):
        state.finish_run(77, RunCounts(), [], status="ok")
