"""The eval runner's retrieval modes: deep enough for document-level k, pure baselines."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from evaluation.dataset import EvalQuery
from evaluation.runner import Plan, Runner
from rag.types import Candidate, Chunk


class PagedRetriever:
    """Every document splits into `per_doc` chunks, ranked document after document."""

    def __init__(self, documents: int, per_doc: int) -> None:
        self.order = [(f"d{d}", c) for d in range(documents) for c in range(per_doc)]
        self.calls: list[dict[str, Any]] = []

    async def retrieve(self, phrases: Sequence[str], filters: Any, *, alpha: float | None = None,
                       limit: int | None = None, diverse: bool | None = None) -> list[Candidate]:
        self.calls.append({"alpha": alpha, "limit": limit, "diverse": diverse})
        hits = self.order[: limit or 20]
        return [Candidate(rank, Chunk(f"{doc}:{n}", doc, "kb", doc, "text"), 1.0 / rank)
                for rank, (doc, n) in enumerate(hits, start=1)]


def run(retriever: PagedRetriever, mode: str, documents: int = 20) -> list[list[str]]:
    plan = Plan((mode,), alpha=0.5, depth=20, documents=documents)
    runner = Runner(plan, retriever, None)  # type: ignore[arg-type]
    return asyncio.run(runner.ask(EvalQuery("q1", "question"))).modes[mode].ranking


@pytest.mark.parametrize(("per_doc", "limits"), [(1, [20]), (3, [20, 40, 80]), (5, [20, 40, 80,
                                                                                    160])])
def test_retrieval_deepens_until_k_distinct_documents(per_doc: int, limits: list[int]) -> None:
    retriever = PagedRetriever(documents=50, per_doc=per_doc)
    ranking = run(retriever, "hybrid")
    assert len(ranking) >= 20
    assert [c["limit"] for c in retriever.calls] == limits


def test_deepening_stops_when_the_index_runs_out() -> None:
    retriever = PagedRetriever(documents=4, per_doc=3)  # 12 chunks in all
    ranking = run(retriever, "hybrid")
    assert [c["limit"] for c in retriever.calls] == [20]
    assert [group[0] for group in ranking] == ["d0", "d1", "d2", "d3"]


def test_deepening_is_capped() -> None:
    retriever = PagedRetriever(documents=50, per_doc=40)  # absurdly split pages
    run(retriever, "hybrid", documents=5)
    assert max(c["limit"] for c in retriever.calls) == 40  # 5 documents x 8 chunks each


@pytest.mark.parametrize(("mode", "alpha", "diverse"), [("bm25", 0.0, False),
                                                        ("vector", 1.0, False),
                                                        ("hybrid", 0.5, None)])
def test_baselines_are_pure_and_hybrid_is_as_configured(mode: str, alpha: float,
                                                        diverse: bool | None) -> None:
    retriever = PagedRetriever(documents=30, per_doc=1)
    run(retriever, mode)
    assert retriever.calls == [{"alpha": alpha, "limit": 20, "diverse": diverse}]
