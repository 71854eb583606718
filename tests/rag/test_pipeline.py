"""The whole pipeline on the in-process index and on real Weaviate, with the fake Anthropic LLM."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rag import messages
from rag.config import GradingConfig, PipelineConfig, RetrievalConfig, SelectionConfig
from rag.generate import Draft, ExtractiveGenerator
from rag.prior import Adjustment
from rag.types import (
    AnswerStatus,
    AskContext,
    Candidate,
    GradeSource,
    Intent,
    Mode,
    Question,
    Turn,
)
from tests.fakes.anthropic_server import FakeAnthropic, Reply, overloaded, text_reply
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_stores import MemoryGradeCache, MemoryRecorder
from tests.rag.builders import CountingIndex, make_llm, make_pipeline
from tests.rag.corpus import CHUNKS

QUESTION = "How do I rotate the staging database credentials?"


def scores_by_title(question: str, document: str) -> tuple[float, str]:
    if "staging database credentials" in document:
        return 0.95, "Gives the staging rotation steps."
    if "production database credentials" in document:
        return 0.35, "About production, not staging."
    return 0.05, "Unrelated."


@pytest.fixture(params=["memory", "weaviate"])
def empty_index(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        return MemoryIndex()
    return request.getfixturevalue("weaviate_index")


@pytest.fixture
async def index(empty_index: Any, embedder: Any) -> CountingIndex:
    inner = empty_index
    vectors = await embedder.embed_documents([f"{c.title}\n{c.text}" for c in CHUNKS])
    await inner.upsert(CHUNKS, vectors)
    return CountingIndex(inner)


async def test_accurate_mode_grades_selects_and_cites(index: CountingIndex, embedder: Any,
                                                      fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = scores_by_title
    recorder = MemoryRecorder()
    pipeline = make_pipeline(index, embedder, make_llm(fake_anthropic.url), recorder=recorder)
    answer = await pipeline.answer(Question(QUESTION))
    assert answer.status is AnswerStatus.ANSWERED and answer.mode is Mode.ACCURATE
    selected = [c for c in answer.candidates if c.selected]
    assert [c.chunk.doc_id for c in selected] == ["staging-creds"]
    assert all(c.grade and c.grade.source is GradeSource.LLM for c in answer.candidates)
    assert [c.doc_id for c in answer.citations] == ["staging-creds"]
    assert "[1]" in answer.text and "[2]" not in answer.text  # one excerpt: [2] was removed
    assert set(answer.timings_ms) >= {"understand", "retrieve", "grade", "select", "generate",
                                      "total"}
    assert set(answer.usage) == {"understand", "grade", "generate"}
    assert answer.models == {"understand": "claude-haiku-5-5", "grade": "claude-haiku-5-5",
                             "generate": "claude-sonnet-5-5"}
    assert recorder.answers == [answer.__class__(**{**answer.__dict__, "interaction_id": None})]
    assert answer.interaction_id == 1 and answer.question.correlation_id


async def test_answer_citing_missing_excerpt_is_repaired(index: CountingIndex, embedder: Any,
                                                         fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Relevant.")
    fake_anthropic.answer_rule = lambda q, n: "Step one [7]. Step two [2]. Step three [4]."
    config = PipelineConfig(retrieval=RetrievalConfig(diversity=False),
                            selection=SelectionConfig(max_chunks=4))
    pipeline = make_pipeline(index, embedder, make_llm(fake_anthropic.url), config=config)
    answer = await pipeline.answer(Question(QUESTION))
    sent = fake_anthropic.calls("answer")[0].body["messages"][0]["content"]
    assert sent.count("<excerpt n=") == 4
    assert answer.text == "Step one. Step two [1]. Step three [2]."
    assert [c.n for c in answer.citations] == [1, 2]
    cited = {c.chunk.chunk_id for c in answer.candidates if c.cited}
    assert cited == {c.chunk_id for c in answer.citations}


async def test_claims_without_valid_citations_are_flagged(index: CountingIndex, embedder: Any,
                                                          fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = scores_by_title
    fake_anthropic.answer_rule = lambda q, n: "Just restart everything [9]."
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION))
    assert answer.uncited_claims and answer.citations == ()


async def test_nothing_relevant_gives_no_answer_with_suggestions(
        index: CountingIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.1, "Does not cover it.")
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question("What is the parking policy for electric scooters?"))
    assert answer.status is AnswerStatus.NO_ANSWER
    assert answer.text == messages.NO_ANSWER
    assert 1 <= len(answer.suggestions) <= 3
    assert not fake_anthropic.calls("answer")  # nothing to answer from: no answer call


async def test_model_saying_no_answer_is_respected(index: CountingIndex, embedder: Any,
                                                   fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.7, "Partly.")
    fake_anthropic.script.append(text_reply("NO_ANSWER", kind="answer"))
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION))
    assert answer.status is AnswerStatus.NO_ANSWER and answer.suggestions


async def test_grading_outage_keeps_the_answer_flowing(index: CountingIndex, embedder: Any,
                                                       fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.extend(overloaded("grade") for _ in range(60))
    llm = make_llm(fake_anthropic.url, max_retries=1)
    answer = await make_pipeline(index, embedder, llm).answer(Question(QUESTION))
    assert answer.status is AnswerStatus.DEGRADED
    assert answer.citations and answer.text
    assert all(c.grade and c.grade.source is GradeSource.FALLBACK and c.grade.score is None
               for c in answer.candidates)
    ranks = [c.rank for c in answer.candidates if c.selected]
    assert ranks == sorted(ranks)  # unchecked candidates keep their retrieval order


async def test_answer_model_outage_falls_back_to_excerpts(index: CountingIndex, embedder: Any,
                                                          fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = scores_by_title
    fake_anthropic.script.extend(overloaded("answer") for _ in range(5))
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION))
    assert answer.status is AnswerStatus.DEGRADED and answer.extractive
    assert answer.text.startswith(messages.LLM_DOWN_NOTE)
    assert "vault write database/rotate-root/staging" in answer.text


async def test_second_identical_question_makes_no_grading_calls(
        index: CountingIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    pipeline = make_pipeline(index, embedder, make_llm(fake_anthropic.url),
                             cache=MemoryGradeCache())
    await pipeline.answer(Question(QUESTION))
    graded = len(fake_anthropic.calls("grade"))
    again = await pipeline.answer(Question(QUESTION))
    assert graded > 0 and len(fake_anthropic.calls("grade")) == graded
    assert {c.grade.source for c in again.candidates if c.grade} == {GradeSource.CACHE}
    assert "grade" not in again.usage


async def test_no_llm_answers_in_fast_mode_with_quoted_excerpts(index: CountingIndex,
                                                                embedder: Any) -> None:
    answer = await make_pipeline(index, embedder, None).answer(Question(QUESTION))
    assert answer.mode is Mode.FAST and answer.extractive
    assert answer.status is AnswerStatus.ANSWERED
    assert answer.citations[0].doc_id == "staging-creds"
    assert answer.text.startswith(messages.EXTRACTIVE_LABEL)
    assert all(c.grade and c.grade.source is GradeSource.HEURISTIC for c in answer.candidates)
    assert answer.usage == {} and answer.models == {}


class PoolSeen(ExtractiveGenerator):
    """The fast-mode generator, noting the pool of candidates each answer was weighed on."""

    def __init__(self) -> None:
        super().__init__()
        self.pools: list[list[str]] = []

    async def generate(self, question: str, selected: Sequence[Candidate],
                       history: Sequence[Turn] = (), preview: Any = None, *,
                       pool: Sequence[Candidate] = (), subject: str = "") -> Draft:
        self.pools.append([c.chunk.chunk_id for c in pool])
        return await super().generate(question, selected, history, preview, pool=pool,
                                      subject=subject)


async def test_fast_mode_weighs_the_question_on_every_candidate_retrieved(
        index: CountingIndex, embedder: Any) -> None:
    seen = PoolSeen()
    answer = await make_pipeline(index, embedder, None, extractive=seen).answer(
        Question(QUESTION))
    assert answer.status is AnswerStatus.ANSWERED
    chosen = [c for c in answer.candidates if c.selected]
    assert 0 < len(chosen) < len(answer.candidates)  # the pool is more than the selection
    assert seen.pools == [[c.chunk.chunk_id for c in answer.candidates]]


async def test_follow_up_is_rewritten_with_history(index: CountingIndex, embedder: Any,
                                                   fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.understanding = {
        "intent": "knowledge",
        "standalone_question": "How do I rotate the production database credentials?",
        "search_phrases": ["rotate production database credentials"], "reply": ""}
    history = (Turn("user", QUESTION), Turn("assistant", "Run vault write ... [1]"))
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question("and for production?", history=history))
    assert answer.search_query == "How do I rotate the production database credentials?"
    sent = fake_anthropic.calls("understand")[0].body["messages"][0]["content"]
    assert QUESTION in sent and "Message: and for production?" in sent
    graded_question = fake_anthropic.calls("grade")[0].body["messages"][0]["content"]
    assert graded_question.startswith("Question: How do I rotate the production")


@pytest.mark.parametrize(("beside", "searched"), [
    (False, "rotate staging database credentials"),  # after the model: its phrases
    (True, QUESTION)])  # beside the model (the default): the question as asked
async def test_a_first_question_is_graded_as_asked(index: CountingIndex, embedder: Any,
                                                    fake_anthropic: FakeAnthropic, beside: bool,
                                                    searched: str) -> None:
    # A rewrite of a question with no history would make the grade cache miss on repeats.
    fake_anthropic.understanding = {
        "intent": "knowledge", "standalone_question": "Staging DB credential rotation steps?",
        "search_phrases": ["rotate staging database credentials"], "reply": ""}
    config = PipelineConfig(retrieval=RetrievalConfig(diversity=False,
                                                      understand_beside=beside))
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url),
                                 config=config).answer(Question(QUESTION))
    assert answer.search_query == QUESTION
    graded_question = fake_anthropic.calls("grade")[0].body["messages"][0]["content"]
    assert graded_question.startswith(f"Question: {QUESTION}")
    assert index.searches == [searched]
    assert answer.usage["understand"].calls == 1  # understood either way, and counted


async def test_a_first_question_is_understood_while_it_is_graded(
        index: CountingIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.latency_s = {"understand": 0.3, "grade": 0.3}
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION))
    assert answer.status is AnswerStatus.ANSWERED
    understood = fake_anthropic.calls("understand")[0]
    first_grade = min(r.started for r in fake_anthropic.calls("grade"))
    assert first_grade < understood.finished  # grading did not wait for the model
    # ...and the answer was written only once the intent was known.
    assert min(r.started for r in fake_anthropic.calls("answer")) >= understood.finished


async def test_small_talk_understood_beside_the_search_gets_the_direct_reply(
        index: CountingIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    # Searched meanwhile (the cost of not waiting); grading stops once the intent is known.
    fake_anthropic.understanding = {"intent": "about_bot", "standalone_question": "",
                                    "search_phrases": [], "reply": "I answer from the docs."}
    fake_anthropic.latency_s = {"understand": 0.3, "grade": 2.0}
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question("what can you do for me?"))
    assert (answer.status, answer.text) == (AnswerStatus.ANSWERED, "I answer from the docs.")
    assert answer.citations == () and fake_anthropic.calls("answer") == []
    assert fake_anthropic.calls("grade")  # grading had started beside the model...
    assert "grade" not in answer.usage and "grade" not in answer.timings_ms  # ...not awaited


@pytest.mark.parametrize("text", ["hi", "Hello!", "thanks"])
async def test_greetings_get_a_direct_reply_without_retrieval(index: CountingIndex, embedder: Any,
                                                              text: str) -> None:
    answer = await make_pipeline(index, embedder, None).answer(Question(text))
    assert answer.status is AnswerStatus.ANSWERED and answer.candidates == ()
    assert index.searches == []


async def test_about_bot_requests_are_classified_by_the_llm(index: CountingIndex, embedder: Any,
                                                            fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.understanding = {"intent": Intent.ABOUT_BOT.value,
                                    "standalone_question": "what are you?",
                                    "search_phrases": [], "reply": "I'm Sift."}
    config = PipelineConfig(retrieval=RetrievalConfig(diversity=False, understand_beside=False))
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url),
                                 config=config).answer(Question("what are you?"))
    assert answer.text == "I'm Sift." and index.searches == []


async def test_access_groups_filter_retrieval(index: CountingIndex, embedder: Any) -> None:
    from dataclasses import replace

    staging = next(c for c in CHUNKS if c.doc_id == "staging-creds")
    secret = replace(staging, access=("engineering",))
    await index.upsert([secret], await embedder.embed_documents([f"{secret.title}\n{secret.text}"]))
    answer = await make_pipeline(index, embedder, None).answer(
        Question(QUESTION, AskContext(access_groups=("public",))))
    assert "staging-creds" not in {c.chunk.doc_id for c in answer.candidates}


async def test_index_failure_becomes_an_error_answer(embedder: Any) -> None:
    from rag.errors import RetrievalError

    class DownIndex(MemoryIndex):
        async def search(self, *args: Any, **kwargs: Any) -> Any:
            raise RetrievalError("Weaviate at http://127.0.0.1:1 is not reachable")

    recorder = MemoryRecorder()
    answer = await make_pipeline(DownIndex(), embedder, None, recorder=recorder).answer(
        Question(QUESTION))
    assert answer.status is AnswerStatus.ERROR
    assert answer.text == RetrievalError.user_message
    assert recorder.answers[0].status is AnswerStatus.ERROR


async def test_batched_strategy_end_to_end(index: CountingIndex, embedder: Any,
                                           fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = scores_by_title
    pipeline = make_pipeline(index, embedder, make_llm(fake_anthropic.url),
                             grading=GradingConfig(strategy="batched", batch_size=4))
    answer = await pipeline.answer(Question(QUESTION))
    assert answer.status is AnswerStatus.ANSWERED
    assert fake_anthropic.calls("grade_batch") and not fake_anthropic.calls("grade")
    assert [c.doc_id for c in answer.citations] == ["staging-creds"]


class Previews:
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, text: str) -> None:
        self.texts.append(text)


async def test_the_answer_is_previewed_while_it_is_written(index: CountingIndex, embedder: Any,
                                                           fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Relevant.")
    fake_anthropic.answer_rule = lambda q, n: "First do this [3]. Then that [1]. Done [9]."
    previews = Previews()
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION), preview=previews)
    assert answer.status is AnswerStatus.ANSWERED
    assert len(previews.texts) > 3
    assert previews.texts[-1] == answer.text == "First do this [1]. Then that [2]. Done."
    assert all(answer.text.startswith(p) for p in previews.texts)
    [call] = fake_anthropic.calls("answer")
    assert call.body["stream"] is True
    # Grades stream too (score first), each used once its score is read.
    assert all(c.body.get("stream") for c in fake_anthropic.calls("grade"))
    assert {c.grade.reason for c in answer.candidates if c.grade} == {"Relevant."}


async def test_a_refusal_is_never_previewed(index: CountingIndex, embedder: Any,
                                            fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = lambda q, d: (0.7, "Partly.")
    fake_anthropic.script.append(text_reply("NO_ANSWER: the excerpts do not say.",
                                            kind="answer"))
    previews = Previews()
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION), preview=previews)
    assert answer.status is AnswerStatus.NO_ANSWER and previews.texts == []


async def test_a_stream_breaking_off_ends_in_excerpts(index: CountingIndex, embedder: Any,
                                                      fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.grade_rule = scores_by_title
    fake_anthropic.script.append(Reply(200, raw="Rotate it with Vault [1] and then", kind="answer",
                                       break_after=3))
    previews = Previews()
    answer = await make_pipeline(index, embedder, make_llm(fake_anthropic.url)).answer(
        Question(QUESTION), preview=previews)
    assert previews.texts  # the person saw the beginning ...
    assert answer.status is AnswerStatus.DEGRADED and answer.extractive  # ... then excerpts
    assert answer.text.startswith(messages.LLM_DOWN_NOTE)
    assert len(fake_anthropic.calls("answer")) == 1  # not retried once text was shown


class NotedPriors:
    """DocumentPriors hiding one document and noting when the hidden list was read."""

    def __init__(self, hidden: str) -> None:
        self._hidden = hidden
        self.hidden_read_at: float | None = None

    def hidden(self) -> Sequence[str]:
        self.hidden_read_at = time.monotonic()
        return [self._hidden]

    def adjustments(self, doc_ids: Sequence[str]) -> Mapping[str, Adjustment]:
        return {}


async def test_hidden_documents_are_read_while_the_question_is_understood(
        index: CountingIndex, embedder: Any, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.latency_s["understand"] = 0.5
    priors = NotedPriors(hidden="staging-creds")
    pipeline = make_pipeline(index, embedder, make_llm(fake_anthropic.url), priors=priors)
    answer = await pipeline.answer(Question(QUESTION, mode=Mode.ACCURATE))

    (understand,) = fake_anthropic.calls("understand")
    assert priors.hidden_read_at is not None and priors.hidden_read_at < understand.finished
    assert answer.candidates and "staging-creds" not in {c.chunk.doc_id for c in answer.candidates}

