"""The answer judge over the fake Messages API: sentence verdicts, accuracy, refusals, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.dataset import EvalQuery
from evaluation.judge import REFUSAL, Judge, parse_accuracy, parse_faithfulness, sentences
from rag.types import Answer, AnswerStatus, Candidate, Citation, Question
from tests.fakes.anthropic_server import FakeAnthropic, overloaded
from tests.fakes.llm_rigs import PROVIDERS, running
from tests.rag.builders import chunk, make_llm

QUERY = EvalQuery("q1", "How often do signing keys rotate?", "Every ninety days.", {"keys": 1})
KEYS = chunk("keys", "Signing keys", "Signing keys rotate every ninety days.")
TEXT = "Keys rotate every ninety days [1]. They also glow in the dark [1].\n\n- Ask me more."


def answered(text: str = TEXT, *, extractive: bool = False) -> Answer:
    return Answer(text, AnswerStatus.ANSWERED, Question(QUERY.text),
                  citations=(Citation(1, "keys", KEYS.title, KEYS.url, KEYS.chunk_id),),
                  candidates=(Candidate(1, KEYS, 0.9, selected=True, cited=True),),
                  extractive=extractive)


@pytest.mark.parametrize(("text", "expected"), [
    ("One. Two? Three!", ["One.", "Two?", "Three!"]),
    ("Steps:\n\n1. Run it [1].\n2. Check it [2].\n---", ["Steps:", "1. Run it [1].",
                                                           "2. Check it [2]."]),
    ("", []),
])
def test_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(("verdicts", "count", "expected"), [
    (["supported", "unsupported", "no_claim"], 3, 0.5),
    (["no_claim", "no_claim"], 2, None),
    (["supported", "supported"], 2, 1.0),
])
def test_parse_faithfulness(verdicts: list[str], count: int, expected: float | None) -> None:
    text = json.dumps({"verdicts": [{"n": n, "verdict": v}
                                    for n, v in enumerate(verdicts, start=1)]})
    assert parse_faithfulness(text, count) == expected


@pytest.mark.parametrize("text", [
    '{"verdicts": [{"n": 1, "verdict": "supported"}]}',  # one of two sentences
    '{"verdicts": [{"n": 1, "verdict": "maybe"}, {"n": 2, "verdict": "supported"}]}',
    "not json",
])
def test_parse_faithfulness_rejects_incomplete_replies(text: str) -> None:
    with pytest.raises(ValueError):
        parse_faithfulness(text, 2)


def test_parse_accuracy() -> None:
    assert parse_accuracy('{"score": 1, "reason": "Half."}') == (1, "Half.")
    for bad in ('{"score": 3, "reason": ""}', '{"score": true}', "[]"):
        with pytest.raises(ValueError):
            parse_accuracy(bad)


async def test_judge_scores_sentences_against_the_cited_excerpts(
        fake_anthropic: FakeAnthropic) -> None:
    seen: list[list[str]] = []

    def verdicts(said: list[str]) -> list[str]:
        seen.append(said)
        return ["supported", "unsupported", "no_claim"]

    fake_anthropic.faithfulness_rule = verdicts
    fake_anthropic.accuracy_rule = lambda q, ref, answer: 1 if ref == QUERY.answer else 0
    judgement = await Judge(make_llm(fake_anthropic.url), "judge-model").judge(QUERY, answered())
    assert seen == [["Keys rotate every ninety days [1].", "They also glow in the dark [1].",
                     "- Ask me more."]]
    assert (judgement.faithfulness, judgement.accuracy, judgement.failures) == (0.5, 1, 0)
    assert judgement.usage.calls == 2
    sent = fake_anthropic.calls("judge_faithfulness")[0].body
    assert sent["model"] == "judge-model" and "output_config" in sent
    assert '<excerpt n="1" title="Signing keys">' in sent["messages"][0]["content"]


async def test_extractive_answers_are_only_scored_for_accuracy(
        fake_anthropic: FakeAnthropic) -> None:
    judgement = await Judge(make_llm(fake_anthropic.url), "m").judge(
        QUERY, answered(extractive=True))
    assert (judgement.faithfulness, judgement.accuracy) == (None, 2)
    assert fake_anthropic.calls("judge_faithfulness") == []


@pytest.mark.parametrize(("query", "expected"), [
    (QUERY, 0),  # the set has an answer: refusing it is a miss
    (EvalQuery("q9", "What is the airspeed of a swallow?"), REFUSAL),
])
async def test_refusals_are_labelled_without_a_call(fake_anthropic: FakeAnthropic,
                                                    query: EvalQuery, expected: int) -> None:
    refusal = Answer("I couldn't find it.", AnswerStatus.NO_ANSWER, Question(query.text))
    judgement = await Judge(make_llm(fake_anthropic.url), "m").judge(query, refusal)
    assert (judgement.accuracy, judgement.faithfulness) == (expected, None)
    assert fake_anthropic.requests == []


async def test_a_failing_judge_leaves_the_metric_unset(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script.append(overloaded(kind="judge_faithfulness"))
    llm = make_llm(fake_anthropic.url, max_retries=0)
    judgement = await Judge(llm, "m").judge(QUERY, answered())
    assert (judgement.faithfulness, judgement.accuracy, judgement.failures) == (None, 2, 1)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_judge_runs_on_every_provider(provider: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`sift eval`'s judge is an LLM-port client like any other: each provider's fake answers."""
    async with running(provider, tmp_path) as rig:
        for name, value in rig.env.items():
            monkeypatch.setenv(name, value)
        rig.fake.faithfulness_rule = lambda said: ["supported", "unsupported", "no_claim"]
        rig.fake.accuracy_rule = lambda q, ref, answer: 2
        llm = rig.llm()
        try:
            judgement = await Judge(llm, rig.answer_model).judge(QUERY, answered())
        finally:
            await llm.close()
    assert (judgement.faithfulness, judgement.accuracy, judgement.failures) == (0.5, 2, 0)
    assert judgement.usage.calls == 2
    assert [r.body["model"] for r in rig.fake.requests] == [rig.answer_model] * 2
