"""Selection is a pure function: threshold, top-k, per-document cap, fallback ordering."""

from __future__ import annotations

import pytest

from rag.config import SelectionConfig
from rag.select import select, selected_in_order
from rag.types import Candidate, Grade, GradeSource
from tests.rag.builders import chunk


def cand(rank: int, doc: str, score: float | None, source: GradeSource = GradeSource.LLM,
         index: int = 0) -> Candidate:
    grade = Grade(score, "r", source)
    return Candidate(rank, chunk(doc, doc, "text", index=index), 1.0 / rank, grade)


CASES = [
    # name, candidates, config, expected selected (doc:index) best first
    ("threshold drops weak", [cand(1, "a", 0.9), cand(2, "b", 0.4), cand(3, "c", 0.5)],
     SelectionConfig(0.5, 12, 5), ["a:0", "c:0"]),
    ("sorted by score not rank", [cand(1, "a", 0.6), cand(2, "b", 0.95), cand(3, "c", 0.7)],
     SelectionConfig(0.5, 12, 5), ["b:0", "c:0", "a:0"]),
    ("top k", [cand(i, f"d{i}", 1 - i / 100) for i in range(1, 16)],
     SelectionConfig(0.5, 3, 5), ["d1:0", "d2:0", "d3:0"]),
    ("per document cap", [cand(i, "big", 0.9, index=i) for i in range(1, 5)] + [cand(5, "x", 0.6)],
     SelectionConfig(0.5, 12, 2), ["big:1", "big:2", "x:0"]),
    ("fallback keeps retrieval order after checked ones",
     [cand(1, "f1", None, GradeSource.FALLBACK), cand(2, "ok", 0.8),
      cand(3, "f2", None, GradeSource.FALLBACK)],
     SelectionConfig(0.5, 12, 5), ["ok:0", "f1:0", "f2:0"]),
    ("heuristic and cache grades count like llm ones",
     [cand(1, "h", 0.7, GradeSource.HEURISTIC), cand(2, "c", 0.9, GradeSource.CACHE)],
     SelectionConfig(0.5, 12, 5), ["c:0", "h:0"]),
    ("nothing passes", [cand(1, "a", 0.1), cand(2, "b", 0.2)], SelectionConfig(0.5, 12, 5), []),
    ("empty", [], SelectionConfig(0.5, 12, 5), []),
]


@pytest.mark.parametrize(("name", "candidates", "config", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_select(name: str, candidates: list[Candidate], config: SelectionConfig,
                expected: list[str]) -> None:
    result = select(candidates, config)
    assert [c.rank for c in result] == [c.rank for c in candidates]  # order and count kept
    chosen = [f"{c.chunk.doc_id}:{c.chunk.chunk_index}" for c in selected_in_order(result)]
    assert chosen == expected


def test_ungraded_candidates_are_never_selected() -> None:
    ungraded = Candidate(1, chunk("a", "a", "t"), 1.0, None)
    assert not select([ungraded], SelectionConfig())[0].selected
