"""Pure: what one recorded interaction adds to each retrieved document's counters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storage.shapes import CandidateLike


@dataclass(frozen=True)
class DocDelta:
    """One document's contribution from one interaction (each flag counts once)."""

    doc_id: str
    title: str
    url: str
    graded: bool
    relevant: bool
    best_score: float  # 0.0 when no chunk of the document has a score
    selected: bool
    cited: bool
    restricted: bool = False  # not public: its title shows only with --include-restricted


def is_cited(candidate: CandidateLike, cited_chunks: set[str]) -> bool:
    return candidate.cited or candidate.chunk.chunk_id in cited_chunks


def document_deltas(candidates: Sequence[CandidateLike], cited_chunks: set[str],
                    threshold: float) -> list[DocDelta]:
    """Group candidates by document; a document's grade is its best chunk's grade.

    Sorted by doc_id, which is also the order the upsert locks rows in.
    """
    by_doc: dict[str, list[CandidateLike]] = {}
    for candidate in candidates:
        by_doc.setdefault(candidate.chunk.doc_id, []).append(candidate)
    return [_delta(doc_id, by_doc[doc_id], cited_chunks, threshold) for doc_id in sorted(by_doc)]


def _delta(doc_id: str, group: list[CandidateLike], cited_chunks: set[str],
           threshold: float) -> DocDelta:
    scores = [c.grade.score for c in group if c.grade is not None and c.grade.score is not None]
    best = max(scores) if scores else 0.0
    first = min(group, key=lambda c: c.rank)
    return DocDelta(
        doc_id=doc_id, title=first.chunk.title, url=first.chunk.url,
        graded=bool(scores), relevant=bool(scores) and best >= threshold,
        best_score=best if scores else 0.0,
        selected=any(c.selected for c in group),
        cited=any(is_cited(c, cited_chunks) for c in group),
        restricted="public" not in first.chunk.access,
    )


def stats_rows(deltas: Iterable[DocDelta], now: datetime,
               model_best: Mapping[str, float]) -> list[dict[str, Any]]:
    """Rows for the document_stats upsert: counters are increments, the rest replaces.
    `model_best`: each document's best grade from a model (not the heuristic), where it has one."""
    return [
        {"doc_id": d.doc_id, "title": d.title, "url": d.url, "retrieved": 1,
         "graded": int(d.graded), "graded_relevant": int(d.relevant),
         "grade_score_sum": d.best_score, "model_graded": int(d.doc_id in model_best),
         "model_grade_sum": model_best.get(d.doc_id, 0.0),
         "selected": int(d.selected), "cited": int(d.cited),
         "thumbs_up": 0, "thumbs_down": 0, "first_seen": now, "last_seen": now,
         "restricted": d.restricted}
        for d in deltas
    ]


COUNTERS = ("retrieved", "graded", "graded_relevant", "grade_score_sum", "model_graded",
            "model_grade_sum", "selected", "cited")
LATEST = ("title", "url", "last_seen", "restricted")
