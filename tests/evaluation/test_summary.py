"""From candidates to document rankings, and from per-question results to per-mode figures."""

from __future__ import annotations

import math

from evaluation.dataset import EvalQuery
from evaluation.runner import ModeResult, QueryResult, graded_result, ranked
from evaluation.summary import first_hit, summarise
from rag.types import Answer, AnswerStatus, Candidate, Grade, GradeSource, Question
from tests.rag.builders import chunk


def candidate(rank: int, doc: str, score: float, grade: float | None = None,
              selected: bool = False) -> Candidate:
    graded = None if grade is None else Grade(grade, "r", GradeSource.LLM)
    return Candidate(rank, chunk(doc, doc, "text", index=rank), score, graded, selected)


def test_ranked_maps_chunks_to_documents_with_ties() -> None:
    pool = [candidate(3, "c", 0.5), candidate(1, "a", 0.9), candidate(2, "a", 0.7),
            candidate(4, "b", 0.5)]
    assert ranked(pool) == [["a"], ["c", "b"]]


def test_graded_result_orders_the_selected_by_grade() -> None:
    pool = (candidate(1, "a", 0.9, 0.6, True), candidate(2, "b", 0.8, 0.9, True),
            candidate(3, "a", 0.7, 0.95, True), candidate(4, "c", 0.6, 0.2))
    answer = Answer("x", AnswerStatus.ANSWERED, Question("q"), candidates=pool,
                    timings_ms={"understand": 1, "retrieve": 2, "grade": 3, "select": 4,
                                "generate": 100, "total": 110})
    result = graded_result(answer)
    assert result.ranking == [["a"], ["b"]] and result.passed == ("a", "b", "a")
    assert result.latency_ms == 10  # to the selected sources, without generation
    assert result.pool == [["a"], ["b"], ["c"]]


def test_summary_means_over_questions_with_relevant_documents() -> None:
    def result(relevant: dict[str, float], ranking: list[list[str]]) -> QueryResult:
        mode = ModeResult(ranking, tuple(d for g in ranking for d in g), 5.0)
        return QueryResult(EvalQuery("q", "text", "", relevant), {"hybrid": mode})

    results = [result({"a": 1}, [["a"], ["b"]]), result({"b": 1}, [["a"], ["b"]]),
               result({}, [["a"]])]  # no judgements: left out of retrieval figures
    summary = summarise(results, ["hybrid", "graded"], [1, 2])
    hybrid = summary.modes["hybrid"]
    assert list(summary.modes) == ["hybrid"] and summary.evaluated == 2
    assert hybrid.recall == {1: 0.5, 2: 1.0} and hybrid.curve == [0.5, 1.0]
    assert hybrid.mrr == 0.75 and hybrid.precision == 0.5
    assert (hybrid.chunks, hybrid.documents, hybrid.latency_p50_ms) == (2.0, 2.0, 5.0)
    assert summary.answers is None and summary.stages == []
    assert [first_hit(r.modes["hybrid"].ranking, r.query.relevant) for r in results] == [
        1, 2, None]
    # Each question's own nDCG@10: the first document found at rank 1, the second at rank 2
    # (1 / log2(3)); their mean is the mode's figure.
    assert [row.ndcg["hybrid"] for row in summary.rows[:2]] == [1.0, 1 / math.log2(3)]
    assert hybrid.ndcg == (1.0 + 1 / math.log2(3)) / 2
