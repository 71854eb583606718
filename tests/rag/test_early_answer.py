"""The answer begun before the slowest grade, kept only when the last grades leave the
selection as it was; and the first question's intent read before its understanding ends."""

from __future__ import annotations

from typing import Any

import pytest

from rag.config import GradingConfig, PipelineConfig, RetrievalConfig
from rag.types import AnswerStatus, Question
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_index import MemoryIndex
from tests.rag.builders import make_llm, make_pipeline
from tests.rag.corpus import CHUNKS

QUESTION = "How do I rotate the staging database credentials?"
SLOW_S = 1.5


@pytest.fixture
async def index(embedder: Any) -> MemoryIndex:
    made = MemoryIndex()
    await made.upsert(CHUNKS, await embedder.embed_documents([f"{c.title}\n{c.text}"
                                                              for c in CHUNKS]))
    return made


def grades(staging: float, production: float):  # type: ignore[no-untyped-def]
    def rule(question: str, document: str) -> tuple[float, str]:
        if "staging database credentials" in document:
            return staging, "Gives the staging rotation steps."
        if "production database credentials" in document:
            return production, "About production."
        return 0.05, "Unrelated."
    return rule


def slow_for(title: str):  # type: ignore[no-untyped-def]
    return lambda document: SLOW_S if f"title: {title}" in document else 0.0


def pipeline(index: MemoryIndex, embedder: Any, fake: FakeAnthropic, share: float) -> Any:
    config = PipelineConfig(retrieval=RetrievalConfig(diversity=False),
                            grading=GradingConfig(early_answer_share=share))
    return make_pipeline(index, embedder, make_llm(fake.url), config=config)


def excerpts_said(content: str) -> str:
    """An answer that says how many excerpts it was written from."""
    return f"Written from {content.count('<excerpt n=')} excerpt(s) [1]."


@pytest.mark.parametrize("share", [0.75, 1.0])
async def test_an_answer_begun_early_is_kept_when_the_last_grade_changes_nothing(
        index: MemoryIndex, embedder: Any, fake_anthropic: FakeAnthropic, share: float) -> None:
    fake_anthropic.grade_rule = grades(0.95, 0.2)
    fake_anthropic.grade_delay_rule = slow_for("Holiday policy")  # scored 0.05: not selected
    shown: list[str] = []

    async def preview(text: str) -> None:
        shown.append(text)

    answer = await pipeline(index, embedder, fake_anthropic, share).answer(
        Question(QUESTION), preview)
    assert answer.status is AnswerStatus.ANSWERED
    assert [c.doc_id for c in answer.citations] == ["staging-creds"]
    [slow] = [g for g in fake_anthropic.calls("grade")
              if "title: Holiday policy" in g.body["messages"][0]["content"]]
    [written] = fake_anthropic.calls("answer")  # one answer call either way
    if share < 1.0:  # begun while the slow grade was still out, and kept
        assert written.started < slow.finished - SLOW_S / 2
    else:  # 1 waits for every grade
        assert written.started >= slow.finished
    assert shown and shown[-1].startswith("Follow the documented procedure [1]")
    assert all(c.grade is not None for c in answer.candidates)  # the slow one is graded too


async def test_an_answer_begun_early_is_dropped_when_the_last_grade_changes_the_selection(
        index: MemoryIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    # Without the slow (best) grade, production alone is selected; with it, staging leads.
    fake_anthropic.grade_rule = grades(0.95, 0.6)
    fake_anthropic.grade_delay_rule = slow_for("Rotating the staging database credentials")
    fake_anthropic.answer_from_prompt = excerpts_said
    shown: list[str] = []

    async def preview(text: str) -> None:
        shown.append(text)

    answer = await pipeline(index, embedder, fake_anthropic, 0.75).answer(
        Question(QUESTION), preview)
    [slow] = [g for g in fake_anthropic.calls("grade")
              if "title: Rotating the staging" in g.body["messages"][0]["content"]]
    early, final = fake_anthropic.calls("answer")
    assert early.started < slow.finished <= final.started
    assert early.body["messages"][0]["content"].count("<excerpt n=") == 1
    assert answer.text.startswith("Written from 2 excerpt(s)")
    assert [c.doc_id for c in answer.citations] == ["staging-creds"]
    assert [c.chunk.doc_id for c in sorted(answer.candidates, key=lambda c: c.position)
            if c.selected] == ["staging-creds", "prod-creds"]
    # The early answer's text never reached the asker.
    assert shown and not [t for t in shown if "from 1 excerpt" in t]


async def test_a_first_questions_answer_waits_for_its_intent_not_its_whole_understanding(
        index: MemoryIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.understanding = {
        "intent": "knowledge", "standalone_question": QUESTION,
        "search_phrases": [" ".join(["staging database credentials rotation"] * 12)],
        "reply": ""}
    fake_anthropic.stream_delay_s = 0.04  # per piece: the long phrases take ~2 s to write
    fake_anthropic.grade_rule = grades(0.95, 0.2)
    answer = await pipeline(index, embedder, fake_anthropic,
                            GradingConfig.early_answer_share).answer(Question(QUESTION))
    assert answer.status is AnswerStatus.ANSWERED
    [understood] = fake_anthropic.calls("understand")
    [written] = fake_anthropic.calls("answer")
    assert understood.body.get("stream")
    assert written.started < understood.finished - 0.5  # the rest was still being written
    # ...and its tokens are still counted with the answer.
    assert answer.usage["understand"].calls == 1 and "understand" in answer.timings_ms


async def test_small_talk_read_from_the_intent_still_waits_for_its_reply(
        index: MemoryIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.understanding = {"intent": "about_bot", "standalone_question": "",
                                    "search_phrases": [],
                                    "reply": "I answer from the team's documents."}
    fake_anthropic.stream_delay_s = 0.02
    answer = await pipeline(index, embedder, fake_anthropic, 0.75).answer(
        Question("what can you do for me?"))
    assert (answer.status, answer.text) == (AnswerStatus.ANSWERED,
                                            "I answer from the team's documents.")
    assert fake_anthropic.calls("answer") == []
