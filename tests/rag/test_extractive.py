"""Fast-mode answers: on-topic passages only, tables and steps whole, one source per document."""

from __future__ import annotations

import re

import pytest

from rag import messages
from rag.generate import ExtractiveGenerator
from rag.types import Candidate, Chunk

LEAVE_TABLE = """| Role in the family | Fully paid leave (company top-up) | When it can be taken |
|--------------------|-----------------------------------|----------------------|
| Birth parent | 20 weeks at 100% of base salary | Starting up to 4 weeks before the due date |
| Non-birth parent | 12 weeks at 100% of base salary | Any time in the first 12 months |
| Adoptive parents | 20 weeks (primary) / 12 weeks (secondary) | Within 12 months |"""
STEPS = "\n".join(f"{i}. Step {i} of rotating the staging database credentials: run the "
                  f"rotation script for replica {i}, confirm the new secret in Vault, and "
                  "watch the connection pool drain before going on." for i in range(1, 7))


def candidate(rank: int, doc_id: str, title: str, text: str, section: str = "",
              index: int = 0) -> Candidate:
    chunk = Chunk(chunk_id=f"kb:{doc_id}:{index}", doc_id=doc_id, source="kb", title=title,
                  text=text, section=section, chunk_index=index)
    return Candidate(rank=rank, chunk=chunk, retrieval_score=1.0 / rank, selected=True)


async def answer(question: str, *selected: Candidate) -> tuple[str, list[str], bool]:
    draft = await ExtractiveGenerator().generate(question, selected)
    return draft.text, [c.doc_id for c in draft.citations], draft.no_answer


async def test_the_passage_with_the_facts_is_quoted_even_when_ranked_fourth() -> None:
    text, docs, _ = await answer(
        "How many weeks of parental leave does a birth parent get?",
        candidate(1, "leave", "Parental leave", "Talk to your manager early.", "Planning", 0),
        candidate(2, "leave", "Parental leave", "Parental leave applies to every employee "
                  "from the first day; a parent keeps their benefits.", "Who is eligible", 1),
        candidate(3, "pto", "PTO and holidays", "Public holidays follow the office calendar.",
                  "Holidays", 0),
        candidate(4, "leave", "Parental leave", LEAVE_TABLE, "How much leave", 2))
    assert "| Birth parent | 20 weeks at 100% of base salary |" in text
    assert all(line in text for line in (f"> {row}" for row in LEAVE_TABLE.splitlines()))
    assert docs == ["leave"]  # one entry, though three of its passages were selected
    assert "Public holidays" not in text  # selected, but carries none of the question's terms
    assert text.count("[1]") == 1 and "[2]" not in text


async def test_numbered_steps_are_kept_whole_and_in_document_order() -> None:
    assert len(STEPS) > 700
    text, docs, _ = await answer(
        "How do I rotate the staging database credentials?",
        candidate(1, "runbook", "Staging DB credential rotation", "After the rotation, check "
                  "the staging dashboards for database credential errors.", "Verify", 3),
        candidate(2, "runbook", "Staging DB credential rotation", STEPS, "Steps", 1))
    assert docs == ["runbook"]
    assert all(f"> {i}. Step {i} of rotating" in text for i in range(1, 7))
    assert text.index("1. Step 1") < text.index("After the rotation")  # document order


async def test_each_document_is_cited_once_and_numbered_in_order() -> None:
    text, docs, _ = await answer(
        "How do I rotate the staging database credentials?",
        candidate(1, "staging", "Staging DB credential rotation", STEPS, "Steps", 0),
        candidate(2, "prod", "Production DB credential rotation",
                  "Rotating production database credentials needs a second approver.", "", 0),
        candidate(3, "staging", "Staging DB credential rotation",
                  "Staging credentials rotate every 90 days.", "Schedule", 1))
    assert docs == ["staging", "prod"]
    assert sorted(set(re.findall(r"\[(\d)\]", text))) == ["1", "2"]


@pytest.mark.parametrize("question", ["Who is the CEO?", "What is the airspeed of a swallow?"])
async def test_nothing_on_topic_is_a_no_answer(question: str) -> None:
    text, docs, no_answer = await answer(
        question,
        candidate(1, "travel", "Travel policy", "Business class only with CEO approval, for "
                  "medical reasons or flights over 12 hours.", "Flights", 0),
        candidate(2, "phishing", "Reporting phishing", "Urgency or fear: \"the CEO needs "
                  "this in 10 minutes\".", "Warning signs", 0))
    assert (no_answer, text, docs) == (True, "", [])


async def test_the_label_says_these_are_quotes() -> None:
    text, _, _ = await answer("staging database credentials",
                              candidate(1, "s", "Staging DB credentials", STEPS))
    assert text.startswith(messages.EXTRACTIVE_LABEL)
