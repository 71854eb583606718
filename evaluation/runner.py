"""Asks every question in every mode through rag/ code and keeps what each mode passed on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evaluation.dataset import EvalQuery
from evaluation.judge import Judge, Judgement
from evaluation.metrics import strict, tie_groups
from rag.pipeline import Pipeline
from rag.retrieve import Retriever
from rag.select import selected_in_order
from rag.types import Answer, Candidate, Mode, Question

MODES = ("bm25", "vector", "hybrid", "graded")
RETRIEVAL_ALPHA = {"bm25": 0.0, "vector": 1.0}  # hybrid: the configured alpha
# The single-signal baselines run without MMR, which re-ranks with vectors: "bm25" is BM25.
BASELINES = frozenset(RETRIEVAL_ALPHA)
MAX_DEPTH_FACTOR = 8  # at most this many chunks per document wanted, when pages split a lot
# The graded mode's latency is the time to the selected sources, comparable with retrieval.
SELECTION_STAGES = ("understand", "retrieve", "grade", "select")


@dataclass(frozen=True)
class Plan:
    """Which modes to run, how deep to retrieve, and how many questions at once."""

    modes: tuple[str, ...]
    alpha: float  # the configured hybrid weight
    depth: int  # chunks retrieved first per question in the retrieval-only modes
    concurrency: int = 1
    accurate: bool = False  # graded mode uses the LLM grader (else the heuristic one)
    documents: int = 0  # distinct documents the retrieval-only modes must rank (max k)


@dataclass(frozen=True)
class ModeResult:
    """The document ranking a mode produced and the document of every chunk it passed on."""

    ranking: list[list[str]]
    passed: tuple[str, ...]
    latency_ms: float
    pool: list[list[str]] | None = None  # graded: the candidates the grader saw


@dataclass(frozen=True)
class QueryResult:
    query: EvalQuery
    modes: dict[str, ModeResult]
    answer: Answer | None = None  # the graded mode's whole answer
    judgement: Judgement | None = None


def ranked(candidates: Sequence[Candidate]) -> list[list[str]]:
    """Documents by the retrieval rank of their best chunk; equal scores are ties."""
    ordered = sorted(candidates, key=lambda c: c.rank)
    return tie_groups((c.chunk.doc_id, c.retrieval_score) for c in ordered)


def graded_result(answer: Answer) -> ModeResult:
    """The documents that reach the answer model, in the order it sees them."""
    chosen = selected_in_order(answer.candidates)
    latency = sum(answer.timings_ms.get(stage, 0.0) for stage in SELECTION_STAGES)
    return ModeResult(strict(c.chunk.doc_id for c in chosen),
                      tuple(c.chunk.doc_id for c in chosen), round(latency, 2),
                      ranked(answer.candidates))


class Runner:
    """Runs the plan; `on_done` is called once per finished question (for a progress bar)."""

    def __init__(self, plan: Plan, retriever: Retriever, pipeline: Pipeline | None,
                 judge: Judge | None = None) -> None:
        self._plan = plan
        self._retriever = retriever
        self._pipeline = pipeline
        self._judge = judge

    async def run(self, queries: Sequence[EvalQuery],
                  on_done: Callable[[QueryResult], None] | None = None) -> list[QueryResult]:
        gate = asyncio.Semaphore(self._plan.concurrency)

        async def one(query: EvalQuery) -> QueryResult:
            async with gate:
                result = await self.ask(query)
            if on_done is not None:
                on_done(result)
            return result

        return list(await asyncio.gather(*(one(q) for q in queries)))

    async def ask(self, query: EvalQuery) -> QueryResult:
        modes: dict[str, ModeResult] = {}
        for mode in self._plan.modes:
            if mode != "graded":
                modes[mode] = await self._retrieve(query.text, mode)
        answer = judgement = None
        if "graded" in self._plan.modes and self._pipeline is not None:
            mode = Mode.ACCURATE if self._plan.accurate else Mode.FAST
            answer = await self._pipeline.answer(Question(query.text, mode=mode))
            modes["graded"] = graded_result(answer)
            if self._judge is not None:
                judgement = await self._judge.judge(query, answer)
        return QueryResult(query, modes, answer, judgement)

    async def _retrieve(self, text: str, mode: str) -> ModeResult:
        """The mode's document ranking, deep enough to hold `documents` distinct documents.

        Metrics are per document but the index returns chunks, and a long page fills several
        slots: the search deepens until the top chunks span enough documents (or run out).
        """
        alpha = RETRIEVAL_ALPHA.get(mode, self._plan.alpha)
        diverse = False if mode in BASELINES else None
        depth, cap = self._plan.depth, max(self._plan.depth, self._plan.documents *
                                           MAX_DEPTH_FACTOR)
        started = time.perf_counter()
        while True:
            candidates = await self._retriever.retrieve([text], None, alpha=alpha, limit=depth,
                                                        diverse=diverse)
            documents = len({c.chunk.doc_id for c in candidates})
            if documents >= self._plan.documents or len(candidates) < depth or depth >= cap:
                break
            depth = min(depth * 2, cap)
        latency = round((time.perf_counter() - started) * 1000, 2)
        return ModeResult(ranked(candidates), tuple(c.chunk.doc_id for c in candidates), latency)
