"""Selection: keep the best graded candidates, with no single document crowding out the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rag.config import SelectionConfig
from rag.types import Candidate, GradeSource


def _eligible(candidate: Candidate, threshold: float) -> bool:
    grade = candidate.grade
    if grade is None:
        return False
    if grade.source is GradeSource.FALLBACK:
        return True  # unchecked, not rejected: it keeps its retrieval order
    return grade.score is not None and grade.score >= threshold


def _order(candidate: Candidate) -> tuple[int, float, int]:
    grade = candidate.grade
    checked = grade is not None and grade.source is not GradeSource.FALLBACK
    score = grade.score if checked and grade is not None and grade.score is not None else 0.0
    # Checked candidates first, by score; unchecked ones after them, in retrieval order.
    return (0 if checked else 1, -score, candidate.rank)


def select(candidates: Sequence[Candidate], config: SelectionConfig) -> list[Candidate]:
    """Return every candidate (in rank order) with `selected` set on the chosen ones."""
    chosen: set[str] = set()
    per_doc: dict[str, int] = {}
    for candidate in sorted(candidates, key=_order):
        if len(chosen) >= config.max_chunks:
            break
        doc = candidate.chunk.doc_id
        if not _eligible(candidate, config.threshold) or per_doc.get(doc, 0) >= config.per_document:
            continue
        chosen.add(candidate.chunk.chunk_id)
        per_doc[doc] = per_doc.get(doc, 0) + 1
    return [replace(c, selected=c.chunk.chunk_id in chosen) for c in candidates]


def selected_in_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The selected candidates, best first: the order the answer model sees them in."""
    return sorted((c for c in candidates if c.selected), key=_order)
