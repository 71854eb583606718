"""Hot writes reuse their statements: answering leaves no statement garbage to collect."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.sql.selectable import Alias

from storage.db import Database
from storage.dedupe import DedupeRepository
from storage.expiring import ExpiringStore
from storage.interactions import InteractionRepository
from storage.models import DocumentStats, table
from storage.upsert import upsert
from tests.storage.builders import answer, cand


def test_one_shape_is_one_statement_and_another_shape_another() -> None:
    stats = table(DocumentStats)
    first = upsert("postgresql", stats, keys=("doc_id",), add=("retrieved",))
    assert upsert("postgresql", stats, keys=["doc_id"], add=["retrieved"]) is first
    assert upsert("postgresql", stats, keys=("doc_id",), add=("graded",)) is not first
    assert upsert("sqlite", stats, keys=("doc_id",), add=("retrieved",)) is not first


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """What the cycle collector finds while the test runs, kept for inspection."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_recording_answers_builds_no_statement_to_throw_away(
        database: Database, saved_garbage: list[object]) -> None:
    repo = InteractionRepository(database)
    candidates = [cand("d1", score=0.9, selected=True, cited=True), cand("d2", rank=2, score=0.2)]
    repo.record(answer(candidates=candidates))  # the first answer may fill caches
    gc.collect()
    saved_garbage.clear()
    for _ in range(5):
        repo.record(answer(candidates=candidates))
    gc.collect()
    # Building an upsert copies the table into an `excluded` alias, a reference cycle: one
    # per upsert per answer when the statements were built on every call.
    assert _aliases(saved_garbage) == []
    with database.read() as session:
        retrieved = dict(session.execute(
            select(DocumentStats.doc_id, DocumentStats.retrieved)).all())
    assert retrieved == {"d1": 6, "d2": 6}  # the shared statements still add every answer


def test_claiming_events_and_storing_values_build_no_statement_to_throw_away(
        database: Database, saved_garbage: list[object]) -> None:
    dedupe, store = DedupeRepository(database), ExpiringStore(database)
    dedupe.claim("slack:Ev0", 60)
    store.put("state:0", {"n": 0}, 60)
    gc.collect()
    saved_garbage.clear()
    claims = [dedupe.claim(f"slack:Ev{n % 3}", 60) for n in range(6)]
    for n in range(5):
        store.put("state:1", {"n": n}, 60)
    gc.collect()
    assert _aliases(saved_garbage) == []
    assert claims == [False, True, True, False, False, False]  # Ev0 was claimed before
    assert store.get("state:1") == {"n": 4}


def _aliases(garbage: list[object]) -> list[object]:
    return [o for o in garbage if issubclass(type(o), Alias)]
