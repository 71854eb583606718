"""The LLM circuit breaker against the fake Messages API: a dead key costs the first question's
one wave of calls, not 22 a question; fast answers with the note while open; one probe call;
recovery."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag import messages
from rag.circuit import CircuitBreaker
from rag.config import PipelineConfig, RetrievalConfig
from rag.generate import ExtractiveGenerator, LLMGenerator
from rag.grade import LLMGrader
from rag.heuristic import HeuristicGrader
from rag.pipeline import Pipeline, Stages
from rag.retrieve import Retriever
from rag.types import AnswerStatus, Mode, Question
from rag.understand import Understander
from tests.fakes.anthropic_server import FakeAnthropic, Reply, error
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_llm
from tests.rag.corpus import CHUNKS

QUESTION = "How do I rotate the staging database credentials?"
COOLDOWN_S = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def unauthorized(times: int) -> list[Reply]:
    return [Reply(401, error("authentication_error", "invalid x-api-key"))] * times


async def _pipeline(fake: FakeAnthropic, embedder: Any, clock: Clock) -> Pipeline:
    index = MemoryIndex()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    llm = CircuitBreaker(make_llm(fake.url), COOLDOWN_S, clock=clock)
    config = PipelineConfig(retrieval=RetrievalConfig(diversity=False))
    stages = Stages(
        understander=Understander(llm, "claude-haiku-5-5"),
        retriever=Retriever(index, embedder, config.retrieval),
        fast_grader=HeuristicGrader(),
        accurate_grader=LLMGrader(llm, "claude-haiku-5-5", config.grading),
        generator=LLMGenerator(llm, "claude-sonnet-5-5", 600),
        extractive=ExtractiveGenerator(),
        fallback_extractive=ExtractiveGenerator(note=messages.LLM_DOWN_NOTE),
        circuit=llm)
    return Pipeline(stages, config)


def _only_the_first_wave(fake: FakeAnthropic) -> None:
    """The first question's calls: its understanding, and the grades that the search beside it
    may have sent before the understanding's 401 came back (how many is a race); each once, and
    no answer call."""
    assert len(fake.calls("understand")) == 1
    grades = fake.calls("grade")
    assert len(fake.requests) == 1 + len(grades)
    assert len({json.dumps(g.body, sort_keys=True) for g in grades}) == len(grades)  # no retry


@pytest.mark.parametrize("slow_401_s", [0.0, 0.5], ids=["quick-401", "grades-sent-first"])
async def test_dead_key_opens_the_circuit_then_one_probe_and_recovery(
        fake_anthropic: FakeAnthropic, embedder: Any, slow_401_s: float) -> None:
    clock = Clock()
    pipeline = await _pipeline(fake_anthropic, embedder, clock)
    # a slow 401 to the understanding lets the search beside it send its grades first
    fake_anthropic.script.append(Reply(401, error("authentication_error", "invalid x-api-key"),
                                       delay_s=slow_401_s, kind="understand"))
    fake_anthropic.script.extend(unauthorized(100))
    fake_anthropic.grade_rule = lambda q, d: (
        (0.9, "Relevant.") if "staging" in d else (0.1, "Unrelated."))

    await pipeline.answer(Question(QUESTION))
    _only_the_first_wave(fake_anthropic)  # the first 401 opened the circuit
    assert bool(fake_anthropic.calls("grade")) or not slow_401_s
    first_question = len(fake_anthropic.requests)

    for _ in range(3):  # within the cool-down: no call at all, excerpts with the note
        answer = await pipeline.answer(Question(QUESTION, mode=Mode.ACCURATE))
        assert answer.mode is Mode.FAST and answer.text.startswith(messages.LLM_DOWN_NOTE)
        assert answer.status is AnswerStatus.DEGRADED and answer.citations
    assert len(fake_anthropic.requests) == first_question

    clock.now += COOLDOWN_S  # one probe; the key is still dead, so the circuit opens again
    await pipeline.answer(Question(QUESTION))
    assert len(fake_anthropic.requests) == first_question + 1
    await pipeline.answer(Question(QUESTION))
    assert len(fake_anthropic.requests) == first_question + 1

    fake_anthropic.script.clear()  # the operator fixed the key
    clock.now += COOLDOWN_S
    recovered = await pipeline.answer(Question(QUESTION))
    assert recovered.mode is Mode.ACCURATE and recovered.status is AnswerStatus.ANSWERED
    assert fake_anthropic.calls("answer") and len(fake_anthropic.requests) > 3
    calls = len(fake_anthropic.requests)
    again = await pipeline.answer(Question(QUESTION))
    assert again.status is AnswerStatus.ANSWERED and len(fake_anthropic.requests) > calls
