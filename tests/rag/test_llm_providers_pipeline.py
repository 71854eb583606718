"""The pipeline behaves the same whatever the provider: grades, the grade cache, early stop,
the fallback to ungraded excerpts and to quoted excerpts, each through a provider's fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rag import messages
from rag.config import GradingConfig, ModelConfig, PipelineConfig, RetrievalConfig
from rag.types import Answer, AnswerStatus, GradeSource, Question
from tests.fakes.anthropic_server import failing
from tests.fakes.llm_rigs import PROVIDERS, Rig, running
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_stores import MemoryGradeCache
from tests.rag.builders import make_pipeline
from tests.rag.corpus import CHUNKS

QUESTION = "How do I rotate the staging database credentials?"
EARLY = GradingConfig(early_stop=True, early_stop_wave=2, early_stop_enough=1,
                      early_stop_score=0.8, concurrency=2)


def scores_by_title(question: str, document: str) -> tuple[float, str]:
    if "staging database credentials" in document:
        return 0.95, "Gives the staging rotation steps."
    return 0.05, "Unrelated."


@pytest.fixture(scope="module")
async def index(embedder: Any) -> MemoryIndex:
    found = MemoryIndex()
    await found.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    return found


async def rig_for(provider: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    context = running(provider, tmp)
    rig = await context.__aenter__()
    for name, value in rig.env.items():
        monkeypatch.setenv(name, value)
    rig.fake.grade_rule = scores_by_title
    return context, rig


@pytest.fixture(params=PROVIDERS)
async def rig(request: pytest.FixtureRequest, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    context, found = await rig_for(request.param, tmp_path, monkeypatch)
    yield found
    await context.__aexit__(None, None, None)


async def ask(rig: Rig, index: MemoryIndex, embedder: Any, *, grading: GradingConfig | None = None,
              cache: MemoryGradeCache | None = None, retries: int = 2) -> Answer:
    config = PipelineConfig(retrieval=RetrievalConfig(diversity=False),
                            grading=grading or GradingConfig(),
                            models=ModelConfig(provider=rig.provider, fast_model=rig.fast_model,
                                               answer_model=rig.answer_model))
    llm = rig.llm(max_retries=retries)
    try:
        return await make_pipeline(index, embedder, llm, config=config,
                                   cache=cache).answer(Question(QUESTION))
    finally:
        await llm.close()


async def test_graded_cited_and_cached(rig: Rig, index: MemoryIndex, embedder: Any) -> None:
    cache = MemoryGradeCache()
    answer = await ask(rig, index, embedder, cache=cache)
    assert answer.status is AnswerStatus.ANSWERED and answer.citations
    assert answer.llm_provider == rig.provider
    assert {c.chunk.doc_id for c in answer.candidates if c.selected} == {"staging-creds"}
    graded = len(rig.fake.calls("grade"))
    again = await ask(rig, index, embedder, cache=cache)
    assert graded > 0 and len(rig.fake.calls("grade")) == graded  # no second grading
    assert {c.grade.source for c in again.candidates if c.grade} == {GradeSource.CACHE}


async def test_a_grading_outage_answers_from_ungraded_candidates(
        rig: Rig, index: MemoryIndex, embedder: Any) -> None:
    rig.fake.script.extend(failing("overloaded", "grade") for _ in range(60))
    answer = await ask(rig, index, embedder, retries=1)
    assert answer.status is AnswerStatus.DEGRADED and answer.citations
    assert all(c.grade and c.grade.source is GradeSource.FALLBACK for c in answer.candidates)


async def test_an_answer_model_outage_quotes_excerpts(rig: Rig, index: MemoryIndex,
                                                      embedder: Any) -> None:
    rig.fake.script.extend(failing("server", "answer") for _ in range(5))
    answer = await ask(rig, index, embedder)
    assert answer.status is AnswerStatus.DEGRADED and answer.extractive
    assert answer.text.startswith(messages.LLM_DOWN_NOTE)


@pytest.mark.parametrize("provider", PROVIDERS[1:])
async def test_early_stop_stops_where_it_does_on_anthropic(
        provider: str, index: MemoryIndex, embedder: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = []
    for name in ("anthropic", provider):
        (tmp_path / name).mkdir()
        context, rig = await rig_for(name, tmp_path / name, monkeypatch)
        try:
            answer = await ask(rig, index, embedder, grading=EARLY)
            outcomes.append((len(rig.fake.calls("grade")), answer.status,
                             sorted(c.chunk.chunk_id for c in answer.candidates if c.selected)))
        finally:
            await context.__aexit__(None, None, None)
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] < len(CHUNKS)  # it did stop early
