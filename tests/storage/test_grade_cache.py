"""The grade cache: exact-key hits only, TTL expiry, content changes never hit old grades."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from rag.ports import GradeKey
from rag.types import Grade, GradeSource
from storage.db import Database
from storage.grade_cache import GradeCacheRepository, StoredGrade
from storage.models import GradeCacheEntry
from tests.storage.clock import Clock

KEY = GradeKey("q-hash", "mfa#0", "content-v1", "g1:haiku")


def _grade(score: float | None, source: GradeSource = GradeSource.LLM) -> Grade:
    return Grade(score, f"because {score}", source, "claude-haiku")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(database: Database, clock: Clock) -> GradeCacheRepository:
    return GradeCacheRepository(database, ttl=timedelta(days=30), clock=clock)


def test_round_trip_returns_the_same_key_objects(cache: GradeCacheRepository) -> None:
    other = GradeKey("q-hash", "vpn#0", "content-v1", "g1:haiku")
    cache.put_many({KEY: _grade(0.9), other: _grade(0.2)})
    keys = [GradeKey("q-hash", "mfa#0", "content-v1", "g1:haiku"), other,
            GradeKey("q-hash", "wifi#0", "content-v1", "g1:haiku")]
    found = cache.get_many(keys)
    assert found == {keys[0]: StoredGrade(0.9, "because 0.9", "claude-haiku"),
                     other: StoredGrade(0.2, "because 0.2", "claude-haiku")}
    assert any(k is keys[0] for k in found)


@pytest.mark.parametrize("miss", [
    pytest.param(GradeKey("q-hash", "mfa#0", "content-v2", "g1:haiku"), id="content-changed"),
    pytest.param(GradeKey("q-hash", "mfa#0", "content-v1", "g2:haiku"), id="grader-changed"),
    pytest.param(GradeKey("other-q", "mfa#0", "content-v1", "g1:haiku"), id="other-question"),
    pytest.param(GradeKey("q-hash", "mfa#1", "content-v1", "g1:haiku"), id="other-chunk"),
])
def test_only_the_exact_key_hits(cache: GradeCacheRepository, miss: GradeKey) -> None:
    cache.put_many({KEY: _grade(0.9)})
    assert cache.get_many([miss]) == {}
    assert KEY in cache.get_many([KEY])


def test_a_changed_chunk_never_hits_its_old_grade(cache: GradeCacheRepository) -> None:
    cache.put_many({KEY: _grade(0.9)})
    changed = GradeKey(KEY.question_hash, KEY.chunk_id, "content-v2", KEY.grader_version)
    cache.put_many({changed: _grade(0.1)})
    assert cache.get_many([changed])[changed].score == 0.1
    assert cache.get_many([KEY])[KEY].score == 0.9  # each content keeps its own verdict


def test_entries_expire_after_the_ttl(cache: GradeCacheRepository, clock: Clock) -> None:
    cache.put_many({KEY: _grade(0.9)})
    clock.advance(days=29, hours=23)
    assert KEY in cache.get_many([KEY])
    clock.advance(hours=1)
    assert cache.get_many([KEY]) == {}
    cache.put_many({KEY: _grade(0.7)})  # a fresh grade restarts the clock
    assert cache.get_many([KEY])[KEY].score == 0.7


def test_zero_ttl_disables_the_cache(database: Database) -> None:
    cache = GradeCacheRepository(database, ttl=timedelta(0))
    cache.put_many({KEY: _grade(0.9)})
    assert cache.get_many([KEY]) == {}
    with database.read() as session:
        assert session.scalars(select(GradeCacheEntry)).all() == []


def test_grades_without_a_score_are_never_stored(cache: GradeCacheRepository,
                                                 database: Database) -> None:
    cache.put_many({KEY: _grade(None, GradeSource.FALLBACK)})
    assert cache.get_many([KEY]) == {}
    with database.read() as session:
        assert session.scalars(select(GradeCacheEntry)).all() == []


def test_hits_are_counted(cache: GradeCacheRepository, database: Database) -> None:
    cache.put_many({KEY: _grade(0.9)})
    for _ in range(3):
        cache.get_many([KEY])
    cache.get_many([GradeKey("q-hash", "mfa#0", "content-v2", "g1:haiku")])
    with database.read() as session:
        entry = session.scalars(select(GradeCacheEntry)).one()
    assert (entry.hits, entry.score, entry.reason, entry.model) == (
        3, 0.9, "because 0.9", "claude-haiku")


def test_expire_deletes_old_entries(cache: GradeCacheRepository, clock: Clock) -> None:
    cache.put_many({KEY: _grade(0.9)})
    clock.advance(days=20)
    newer = GradeKey("q-hash", "vpn#0", "content-v1", "g1:haiku")
    cache.put_many({newer: _grade(0.5)})
    clock.advance(days=15)
    assert cache.expire() == 1
    assert cache.get_many([KEY, newer]) == {newer: StoredGrade(0.5, "because 0.5",
                                                               "claude-haiku")}


def test_empty_lookups(cache: GradeCacheRepository) -> None:
    assert cache.get_many([]) == {}
    cache.put_many({})
