"""Admin overrides and the learned prior at query time, on real Weaviate and a real database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.priors import StoredPriors
from rag.prior import PriorConfig
from rag.types import (
    Answer,
    AnswerStatus,
    AskContext,
    Candidate,
    Citation,
    Grade,
    GradeSource,
    Mode,
    Question,
    SearchFilters,
)
from storage.db import Database
from storage.feedback import FeedbackRepository
from storage.interactions import InteractionRepository
from storage.overrides import HistoryOfDocuments, OverrideRepository
from tests.rag.builders import make_pipeline
from tests.rag.corpus import CHUNKS

QUESTION = "How do I rotate the staging database credentials?"
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def database(tmp_path: Path) -> Database:
    db = Database(f"sqlite:///{tmp_path / 'sift.db'}")
    db.upgrade()
    return db


@pytest.fixture
def overrides(database: Database) -> OverrideRepository:
    return OverrideRepository(database)


def priors(database: Database, overrides: OverrideRepository) -> StoredPriors:
    return StoredPriors(overrides, HistoryOfDocuments(database, clock=lambda: NOW),
                        PriorConfig(), clock=lambda: NOW)


@pytest.fixture
async def index(weaviate_index: Any, embedder: Any) -> Any:
    vectors = await embedder.embed_documents([f"{c.title}\n{c.text}" for c in CHUNKS])
    await weaviate_index.upsert(CHUNKS, vectors)
    return weaviate_index


async def ask(index: Any, embedder: Any, database: Database,
              overrides: OverrideRepository) -> Answer:
    pipeline = make_pipeline(index, embedder, None, priors=priors(database, overrides))
    return await pipeline.answer(Question(QUESTION, mode=Mode.FAST))


def docs(answer: Answer) -> list[str]:
    return list(dict.fromkeys(c.chunk.doc_id for c in answer.candidates))


async def test_a_hidden_document_is_never_retrieved(index: Any, embedder: Any,
                                                    database: Database,
                                                    overrides: OverrideRepository) -> None:
    before = await ask(index, embedder, database, overrides)
    assert docs(before)[0] == "staging-creds"
    overrides.set("staging-creds", "hide")
    after = await ask(index, embedder, database, overrides)
    assert "staging-creds" not in docs(after) and docs(after)
    # Inside the Weaviate query itself: even a search deep enough for every chunk omits it.
    vector = await embedder.embed_query(QUESTION)
    hits = await index.search(QUESTION, vector, limit=100, alpha=0.5,
                              filters=SearchFilters(exclude_docs=("staging-creds",)))
    assert hits and "staging-creds" not in {h.chunk.doc_id for h in hits}
    overrides.reset("staging-creds")
    assert docs(await ask(index, embedder, database, overrides))[0] == "staging-creds"


async def test_pin_puts_a_document_first_and_selects_it(index: Any, embedder: Any,
                                                        database: Database,
                                                        overrides: OverrideRepository) -> None:
    before = await ask(index, embedder, database, overrides)
    last = docs(before)[-1]
    assert last != "staging-creds"
    overrides.set(last, "pin")
    after = await ask(index, embedder, database, overrides)
    first = after.candidates[0]
    assert first.chunk.doc_id == last and first.pinned and first.selected


@pytest.mark.parametrize(("kind", "doc", "factor"), [
    ("demote", "staging-creds", 0.05),  # the best match falls below the next one
    ("boost", "prod-creds", 20.0),  # the runner-up overtakes it
])
async def test_boost_and_demote_reorder(index: Any, embedder: Any, database: Database,
                                        overrides: OverrideRepository, kind: str, doc: str,
                                        factor: float) -> None:
    before = docs(await ask(index, embedder, database, overrides))
    assert before[:2] == ["staging-creds", "prod-creds"]
    overrides.set(doc, kind, factor=factor)
    after = docs(await ask(index, embedder, database, overrides))
    assert after[0] == "prod-creds"


def record(database: Database, doc: str, relevant: bool, at: datetime,
           source: GradeSource = GradeSource.LLM) -> int:
    chunk = next(c for c in CHUNKS if c.doc_id == doc)
    grade = Grade(0.9 if relevant else 0.1, "r", source)
    candidate = Candidate(1, chunk, 0.9, grade, selected=True, cited=True)
    answer = Answer("text [1]", AnswerStatus.ANSWERED, Question("q", AskContext()),
                    citations=(Citation(1, doc, chunk.title, "", chunk.chunk_id),),
                    candidates=(candidate,))
    return InteractionRepository(database, clock=lambda: at).record(answer)


def test_the_learned_prior_follows_grades_and_people(database: Database,
                                                     overrides: OverrideRepository) -> None:
    feedback = FeedbackRepository(database, clock=lambda: NOW)
    for day in range(40):
        at = NOW - timedelta(days=day)
        record(database, "vpn", True, at)
        ids = record(database, "holidays", False, at)
        feedback.vote(ids, "mallory", -1, "button")  # one person, forty answers
    for n in range(10):
        feedback.vote(record(database, "webhooks", True, NOW), f"user{n}", -1, "button")
    found = priors(database, overrides).adjustments(["vpn", "holidays", "webhooks", "new"])
    assert found["vpn"].multiplier > 1.1  # relevant every time it was retrieved
    assert 0.7 <= found["holidays"].multiplier < 1.0
    assert "new" not in found  # no history: left at 1
    # Ten people saying no outweigh one person saying no forty times.
    assert found["webhooks"].multiplier < found["vpn"].multiplier
    only_votes = StoredPriors(overrides, HistoryOfDocuments(database, clock=lambda: NOW),
                              PriorConfig(grade_weight=0.0), clock=lambda: NOW)
    voted = only_votes.adjustments(["holidays", "webhooks"])
    assert voted["webhooks"].multiplier < voted["holidays"].multiplier < 1.0


@pytest.mark.parametrize(("source", "moved"), [
    (GradeSource.LLM, True),
    (GradeSource.CACHE, True),  # a model's grade, remembered
    (GradeSource.HEURISTIC, False),  # computed from the retrieval score the prior scales
])
def test_only_a_models_grades_are_evidence(database: Database, overrides: OverrideRepository,
                                           source: GradeSource, moved: bool) -> None:
    for day in range(40):
        record(database, "vpn", True, NOW - timedelta(days=day), source)
        record(database, "holidays", False, NOW - timedelta(days=day), source)
    found = priors(database, overrides).adjustments(["vpn", "holidays"])
    assert ("vpn" in found and found["vpn"].multiplier > 1.1) is moved
    assert ("holidays" in found and found["holidays"].multiplier < 0.9) is moved


def test_an_override_replaces_the_learned_prior(database: Database,
                                                overrides: OverrideRepository) -> None:
    for day in range(30):
        record(database, "vpn", True, NOW - timedelta(days=day))
    overrides.set("vpn", "demote")
    assert priors(database, overrides).adjustments(["vpn"])["vpn"].multiplier == 0.7
    overrides.set("vpn", "hide")
    stored = priors(database, overrides)
    assert stored.hidden() == ["vpn"] and "vpn" not in stored.adjustments(["vpn"])


def test_a_learned_multiplier_is_reused_for_refresh_s_but_an_override_applies_at_once(
        database: Database, overrides: OverrideRepository) -> None:
    ticks = [0.0]
    stored = StoredPriors(overrides, HistoryOfDocuments(database, clock=lambda: NOW),
                          PriorConfig(), refresh_s=60.0, clock=lambda: NOW,
                          monotonic=lambda: ticks[0])
    for day in range(30):
        record(database, "vpn", True, NOW - timedelta(days=day))
        record(database, "holidays", False, NOW - timedelta(days=day))
    first = stored.adjustments(["vpn"])["vpn"].multiplier
    assert first > 1.1
    for day in range(30):
        record(database, "vpn", False, NOW - timedelta(days=day, hours=1))
    ticks[0] = 59.0
    assert stored.adjustments(["vpn"])["vpn"].multiplier == first  # remembered
    overrides.set("vpn", "demote")
    assert stored.adjustments(["vpn"])["vpn"].multiplier == 0.7  # the admin's word, at once
    overrides.reset("vpn")
    ticks[0] = 61.0
    reread = stored.adjustments(["vpn"])["vpn"].multiplier
    assert reread < first  # half the retrievals were irrelevant: read again after refresh_s
