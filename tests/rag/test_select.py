"""Selection is a pure function: answerability, the retrieval floor, rank-relative grades,
document-level aggregation, the blended order, pins, fallback grades and the caps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.config import SelectionConfig
from rag.select import select, selected_in_order
from rag.types import Candidate, Grade, GradeSource
from tests.rag.builders import chunk


def cand(rank: int, doc: str, score: float | None, source: GradeSource = GradeSource.LLM,
         index: int = 0) -> Candidate:
    grade = Grade(score, "r", source)
    return Candidate(rank, chunk(doc, doc, "text", index=index), 1.0 / rank, grade)


def rules(floor: int = 0, relative: float = 0.0, weight: float = 0.0, max_chunks: int = 12,
          per_document: int = 5, threshold: float = 0.5, floor_min: float = 0.0,
          share: float = 0.0) -> SelectionConfig:
    return SelectionConfig(threshold=threshold, max_chunks=max_chunks,
                           per_document=per_document, floor=floor, floor_min=floor_min,
                           heuristic_floor_share=share, relative=relative,
                           retrieval_weight=weight)


HEUR = GradeSource.HEURISTIC


FALL = GradeSource.FALLBACK
CASES = [
    # name, candidates, config, expected selected (doc:index) in the order the model sees them
    ("absolute threshold without a floor", [cand(1, "a", 0.9), cand(2, "b", 0.4),
                                            cand(3, "c", 0.5)], rules(), ["a:0", "c:0"]),
    ("grade order when retrieval has no weight",
     [cand(1, "a", 0.6), cand(2, "b", 0.95), cand(3, "c", 0.7)], rules(), ["b:0", "c:0", "a:0"]),
    ("the floor keeps retrieval's top documents whatever their grade",
     [cand(1, "a", 0.2), cand(2, "b", 0.9), cand(3, "c", 0.1), cand(4, "d", 0.3)],
     rules(floor=2), ["b:0", "a:0"]),
    ("the floor never keeps a grade below floor_min (off-topic)",
     [cand(1, "a", 0.9), cand(2, "b", 0.45), cand(3, "c", 0.2)],
     rules(floor=3, floor_min=0.4), ["a:0", "b:0"]),
    ("a heuristic floor document is off-topic below a share of the best grade, not floor_min",
     [cand(1, "a", 0.6, HEUR), cand(2, "b", 0.35, HEUR), cand(3, "c", 0.25, HEUR)],
     rules(floor=3, floor_min=0.4, share=0.5), ["a:0", "b:0"]),
    ("the heuristic share scales with the best grade of the pool",
     [cand(1, "a", 0.9, HEUR), cand(2, "b", 0.4, HEUR), cand(3, "c", 0.5, HEUR)],
     rules(floor=3, floor_min=0.0, share=0.5), ["a:0", "c:0"]),
    ("an llm grade keeps the absolute floor_min whatever the heuristic share",
     [cand(1, "a", 0.6), cand(2, "b", 0.35), cand(3, "c", 0.25)],
     rules(floor=3, floor_min=0.4, share=0.5), ["a:0"]),
    ("the heuristic share applies inside the floor only",
     [cand(1, "a", 0.9, HEUR), cand(2, "b", 0.5, HEUR), cand(3, "c", 0.6, HEUR)],
     rules(floor=1, relative=0.8, share=0.5), ["a:0"]),
    ("rank-relative: beyond the floor only grades near the best",
     [cand(1, "a", 0.9), cand(2, "b", 0.8), cand(3, "c", 0.6), cand(4, "d", 0.95)],
     rules(floor=1, relative=0.8), ["d:0", "a:0", "b:0"]),
    ("not answerable: nothing reaches the threshold, the floor keeps nothing",
     [cand(1, "a", 0.1), cand(2, "b", 0.2)], rules(floor=5), []),
    ("retrieval weight breaks near-ties in favour of the higher-ranked document",
     [cand(1, "a", 0.8), cand(2, "b", 0.82)], rules(weight=0.5), ["a:0", "b:0"]),
    ("retrieval weight does not beat a clearly better grade",
     [cand(1, "a", 0.3), cand(5, "b", 0.95)], rules(floor=1, weight=0.3), ["b:0", "a:0"]),
    ("document-level: a document's grade is its best chunk's, its chunks stay together",
     [cand(1, "big", 0.6, index=0), cand(2, "x", 0.8), cand(3, "big", 0.9, index=1)],
     rules(), ["big:1", "big:0", "x:0"]),
    ("a kept document's weak chunks stay out",
     [cand(1, "doc", 0.9, index=0), cand(2, "doc", 0.1, index=1), cand(3, "doc", 0.6, index=2)],
     rules(floor=1), ["doc:0", "doc:2"]),
    ("top k", [cand(i, f"d{i}", 1 - i / 100) for i in range(1, 16)],
     rules(max_chunks=3), ["d1:0", "d2:0", "d3:0"]),
    ("per document cap keeps the best chunks",
     [cand(i, "big", 0.5 + i / 10, index=i) for i in range(1, 5)] + [cand(5, "x", 0.6)],
     rules(per_document=2), ["big:4", "big:3", "x:0"]),
    ("fallback keeps retrieval order after checked ones",
     [cand(1, "f1", None, FALL), cand(2, "ok", 0.8), cand(3, "f2", None, FALL)],
     rules(), ["ok:0", "f1:0", "f2:0"]),
    ("grading failed everywhere: ungraded top-K in retrieval order",
     [cand(i, f"f{i}", None, FALL) for i in range(1, 6)], rules(floor=3, max_chunks=4),
     ["f1:0", "f2:0", "f3:0", "f4:0"]),
    ("heuristic and cache grades count like llm ones",
     [cand(1, "h", 0.7, GradeSource.HEURISTIC), cand(2, "c", 0.9, GradeSource.CACHE)],
     rules(), ["c:0", "h:0"]),
    ("a pinned document comes first and is kept",
     [cand(1, "a", 0.9), cand(2, "b", 0.8), replace(cand(3, "p", 0.1), pinned=True)],
     rules(floor=1, relative=0.8), ["p:0", "a:0", "b:0"]),
    ("empty", [], rules(floor=5), []),
]


@pytest.mark.parametrize(("name", "candidates", "config", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_select(name: str, candidates: list[Candidate], config: SelectionConfig,
                expected: list[str]) -> None:
    result = select(candidates, config)
    assert [c.rank for c in result] == [c.rank for c in candidates]  # order and count kept
    chosen = [f"{c.chunk.doc_id}:{c.chunk.chunk_index}" for c in selected_in_order(result)]
    assert chosen == expected
    assert sorted(c.position for c in result if c.selected) == list(range(1, len(expected) + 1))


def test_ungraded_candidates_are_never_selected() -> None:
    ungraded = Candidate(1, chunk("a", "a", "t"), 1.0, None)
    assert not select([ungraded], SelectionConfig())[0].selected
