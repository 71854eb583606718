"""The A/B split: a configurable share of questions runs in fast mode, and the answer says so."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rag.config import PipelineConfig, RetrievalConfig
from rag.types import Mode, Question
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_stores import MemoryRecorder
from tests.rag.builders import make_llm, make_pipeline
from tests.rag.corpus import CHUNKS


def config(fast_share: float) -> PipelineConfig:
    return PipelineConfig(retrieval=RetrievalConfig(diversity=False), fast_share=fast_share)


@pytest.mark.parametrize(("share", "low", "high"),
                         [(0.0, 0, 0), (0.3, 540, 660), (1.0, 2000, 2000)])
def test_the_fast_share_of_questions_runs_in_fast_mode(share: float, low: int, high: int) -> None:
    pipeline = make_pipeline(MemoryIndex(), None, make_llm("http://127.0.0.1:9"),
                             config=config(share))
    random.seed(20261122)
    modes = [pipeline.resolve_mode(Question("q")) for _ in range(2000)]
    assert low <= modes.count(Mode.FAST) <= high  # 0.3: 600 expected, +-4.6 sd


def test_an_explicit_mode_wins_and_no_llm_means_fast() -> None:
    with_llm = make_pipeline(MemoryIndex(), None, make_llm("http://127.0.0.1:9"),
                             config=config(1.0))
    assert with_llm.resolve_mode(Question("q", mode=Mode.ACCURATE)) is Mode.ACCURATE
    without = make_pipeline(MemoryIndex(), None, None, config=config(0.0))
    assert without.resolve_mode(Question("q", mode=Mode.ACCURATE)) is Mode.FAST


async def test_the_arm_is_recorded_with_the_interaction(embedder: Any,
                                                        fake_anthropic: FakeAnthropic) -> None:
    index = MemoryIndex()
    await index.upsert(CHUNKS, await embedder.embed_documents([c.text for c in CHUNKS]))
    recorder = MemoryRecorder()
    pipeline = make_pipeline(index, embedder, make_llm(fake_anthropic.url), recorder=recorder,
                             config=config(1.0))
    answer = await pipeline.answer(Question("How do I rotate the staging credentials?"))
    assert answer.mode is Mode.FAST and recorder.answers[0].mode is Mode.FAST
    assert recorder.answers[0].ab_arm == "fast"  # the split chose it
    assert fake_anthropic.calls("grade") == []  # the fast arm never calls the grader


@pytest.mark.parametrize(("share", "asked", "arm"), [(0.0, None, ""), (1.0, Mode.ACCURATE, ""),
                                                     (1.0, None, "fast")])
async def test_only_a_mode_the_split_chose_is_an_arm(
        embedder: Any, fake_anthropic: FakeAnthropic, share: float, asked: Mode | None,
        arm: str) -> None:
    recorder = MemoryRecorder()
    pipeline = make_pipeline(MemoryIndex(), embedder, make_llm(fake_anthropic.url),
                             recorder=recorder, config=config(share))
    await pipeline.answer(Question("How do I rotate the staging credentials?", mode=asked))
    assert recorder.answers[0].ab_arm == arm
