"""Turns per-question results into per-mode metrics, answer metrics and per-stage cost and speed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.metrics import (
    hit_at_k,
    mean,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    precision,
    recall_at_k,
)
from evaluation.runner import QueryResult
from rag.types import AnswerStatus

CUTOFF = 10  # MRR@10 and nDCG@10
PIPELINE_STAGES = ("understand", "retrieve", "grade", "select", "generate", "total")


@dataclass(frozen=True)
class ModeSummary:
    """Retrieval metrics of one mode, means over the questions that have relevant documents."""

    mode: str
    recall: dict[int, float]  # k -> share of questions with a relevant document in the top k
    doc_recall: dict[int, float]  # k -> mean share of each question's relevant documents
    curve: list[float]  # recall@1..max k, for the chart
    mrr: float
    ndcg: float
    precision: float | None  # share of the chunks passed on that come from relevant documents
    chunks: float  # mean chunks passed on per question
    documents: float  # mean distinct documents among them
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    pool_recall: float | None = None  # graded: recall of the candidates the grader saw


@dataclass(frozen=True)
class StageSummary:
    stage: str
    p50_ms: float | None
    p95_ms: float | None
    input_tokens: float = 0.0  # mean per question
    output_tokens: float = 0.0
    calls: float = 0.0


@dataclass(frozen=True)
class AnswerSummary:
    judge_model: str
    answered: int
    faithfulness: float | None  # mean over answers with claims
    accuracy: float | None  # mean over the 0/1/2 scores (refusals are counted apart)
    accuracy_counts: dict[int, int]  # 2, 1, 0, -1 -> questions
    refusal_rate: float
    errors: int
    judge_failures: int


@dataclass(frozen=True)
class QueryRow:
    """One question in the JSON: the rank of its first relevant document and its nDCG@10 in
    each mode (per question, so that two runs can be compared question by question)."""

    query_id: str
    text: str
    relevant: tuple[str, ...]
    first_hit: dict[str, int | None]
    status: str = ""
    accuracy: int | None = None
    faithfulness: float | None = None
    ndcg: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Results:
    modes: dict[str, ModeSummary]
    stages: list[StageSummary]
    answers: AnswerSummary | None
    rows: list[QueryRow] = field(default_factory=list)
    evaluated: int = 0  # questions with at least one relevant document


def _mode(mode: str, results: Sequence[QueryResult], ks: Sequence[int]) -> ModeSummary:
    runs = [(r.query.relevant, r.modes[mode]) for r in results if r.query.relevant]
    top = max(ks)

    def avg(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    latencies = [m.latency_ms for _, m in runs]
    pools = [(rel, m.pool) for rel, m in runs if m.pool is not None]
    return ModeSummary(
        mode=mode,
        recall={k: avg([hit_at_k(m.ranking, rel, k) for rel, m in runs]) for k in ks},
        doc_recall={k: avg([recall_at_k(m.ranking, rel, k) for rel, m in runs]) for k in ks},
        curve=[avg([hit_at_k(m.ranking, rel, k) for rel, m in runs]) for k in range(1, top + 1)],
        mrr=avg([mrr_at_k(m.ranking, rel, CUTOFF) for rel, m in runs]),
        ndcg=avg([ndcg_at_k(m.ranking, rel, CUTOFF) for rel, m in runs]),
        precision=mean(precision(m.passed, rel) for rel, m in runs),
        chunks=avg([float(len(m.passed)) for _, m in runs]),
        documents=avg([float(len(set(m.passed))) for _, m in runs]),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        pool_recall=avg([hit_at_k(p, rel, top) for rel, p in pools]) if pools else None,
    )


def _stages(results: Sequence[QueryResult]) -> list[StageSummary]:
    answers = [r.answer for r in results if r.answer is not None]
    if not answers:
        return []
    rows = []
    for stage in PIPELINE_STAGES:
        times = [a.timings_ms[stage] for a in answers if stage in a.timings_ms]
        usage = [a.usage[stage] for a in answers if stage in a.usage]
        n = len(answers)
        rows.append(StageSummary(stage, percentile(times, 50), percentile(times, 95),
                                 sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
                                     for u in usage) / n,
                                 sum(u.output_tokens for u in usage) / n,
                                 sum(u.calls for u in usage) / n))
    judged = [r.judgement for r in results if r.judgement is not None]
    if judged:
        times = [j.latency_ms for j in judged]
        rows.append(StageSummary("judge (evaluation only)", percentile(times, 50),
                                 percentile(times, 95),
                                 sum(j.usage.input_tokens for j in judged) / len(judged),
                                 sum(j.usage.output_tokens for j in judged) / len(judged),
                                 sum(j.usage.calls for j in judged) / len(judged)))
    return rows


def _answers(results: Sequence[QueryResult], judge_model: str) -> AnswerSummary | None:
    pairs = [(r.answer, r.judgement) for r in results
             if r.answer is not None and r.judgement is not None]
    if not pairs:
        return None
    scores = [j.accuracy for _, j in pairs if j.accuracy is not None]
    return AnswerSummary(
        judge_model=judge_model,
        answered=sum(1 for a, _ in pairs if a.status in (AnswerStatus.ANSWERED,
                                                           AnswerStatus.DEGRADED)),
        faithfulness=mean(j.faithfulness for _, j in pairs),
        accuracy=mean(float(s) for s in scores if s >= 0),
        accuracy_counts={s: scores.count(s) for s in (2, 1, 0, -1)},
        refusal_rate=sum(1 for a, _ in pairs if a.status is AnswerStatus.NO_ANSWER) / len(pairs),
        errors=sum(1 for a, _ in pairs if a.status is AnswerStatus.ERROR),
        judge_failures=sum(j.failures for _, j in pairs),
    )


def first_hit(ranking: list[list[str]], relevant: Mapping[str, float]) -> int | None:
    """1-based rank of the first relevant document (the start of its tie group)."""
    position = 1
    for group in ranking:
        if any(d in relevant for d in group):
            return position
        position += len(group)
    return None


def _row(result: QueryResult) -> QueryRow:
    j, a = result.judgement, result.answer
    return QueryRow(result.query.query_id, result.query.text, tuple(result.query.relevant),
                    {mode: first_hit(m.ranking, result.query.relevant)
                     for mode, m in result.modes.items()},
                    a.status.value if a else "", j.accuracy if j else None,
                    j.faithfulness if j else None,
                    {mode: ndcg_at_k(m.ranking, result.query.relevant, CUTOFF)
                     for mode, m in result.modes.items()})


def summarise(results: Sequence[QueryResult], modes: Sequence[str], ks: Sequence[int],
              judge_model: str = "") -> Results:
    present = [m for m in modes if results and m in results[0].modes]
    return Results(
        modes={m: _mode(m, results, ks) for m in present},
        stages=_stages(results),
        answers=_answers(results, judge_model),
        rows=[_row(r) for r in results],
        evaluated=sum(1 for r in results if r.query.relevant),
    )
