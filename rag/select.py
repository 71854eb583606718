"""Selection: what reaches the answer, never losing what retrieval ranked highest.

The rules, in order:
1. Answerable: some candidate's checked grade reaches `threshold`, or grading failed for
   some (a failure is not a verdict). Otherwise nothing is selected: the knowledge base does
   not cover the question.
2. Documents, not chunks, are judged: a document's grade is its best chunk's.
3. The floor: the first `floor` documents in retrieval order, and pinned documents, are
   kept unless the grader's verdict is off-topic. Retrieval already put them on top; a
   grader, above all a heuristic one, is not sure enough to drop them for a middling grade.
   Off-topic is a grade below `floor_min` from an LLM (its scores mean the same for every
   question), but below `heuristic_floor_share` of the best grade from the heuristic grader:
   its scores are relative to the pool graded together (term rarity among the candidates,
   retrieval score as a share of the best), so a fixed cut falls at a different place for
   every question. Half the best grade: a floor document that matches the question less
   than half as well as the best one is off-topic; a middling one stays for the answer.
4. Beyond the floor, a document is kept when its grade is at least `relative` times the best
   grade (rank-relative: absolute scores of different graders are not comparable) and at
   least `threshold`.
5. Order: pinned first, then by a blend of the document's grade and its retrieval rank
   (`retrieval_weight`), both relative to the best; unchecked candidates keep retrieval order.
6. A kept document passes its best chunk; its other chunks only when their own grade reaches
   `threshold`. At most `per_document` chunks of one document, `max_chunks` in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rag.config import SelectionConfig
from rag.types import Candidate, GradeSource


def _checked(candidate: Candidate) -> float | None:
    """The candidate's grade score, or None when it was not checked (grading failed)."""
    grade = candidate.grade
    if grade is None or grade.source is GradeSource.FALLBACK or grade.score is None:
        return None
    return grade.score


@dataclass
class _Doc:
    doc_id: str
    retrieval_rank: int  # 1-based among documents, by their best chunk's rank
    chunks: list[Candidate]
    grade: float | None  # best checked chunk grade; None when no chunk was checked
    pinned: bool
    heuristic: bool = False  # the best grade came from the heuristic grader


def _documents(candidates: Sequence[Candidate]) -> list[_Doc]:
    groups: dict[str, list[Candidate]] = {}
    for candidate in sorted(candidates, key=lambda c: c.rank):
        if candidate.grade is None:
            continue  # never went through grading at all
        groups.setdefault(candidate.chunk.doc_id, []).append(candidate)
    docs = []
    for position, (doc_id, chunks) in enumerate(groups.items(), start=1):
        scores = [s for s in map(_checked, chunks) if s is not None]
        chunks.sort(key=lambda c: (-(_checked(c) or 0.0), c.rank))
        top = chunks[0].grade  # the best checked grade's, when any chunk was checked
        heuristic = bool(scores) and top is not None and top.source is GradeSource.HEURISTIC
        docs.append(_Doc(doc_id, position, chunks, max(scores) if scores else None,
                         any(c.pinned for c in chunks), heuristic))
    return docs


def _answerable(docs: Sequence[_Doc], threshold: float) -> bool:
    return any(d.grade is None or d.grade >= threshold for d in docs)


def _priority(doc: _Doc, best: float, config: SelectionConfig) -> tuple[int, float, int]:
    if doc.grade is None:  # unchecked: after the checked ones, in retrieval order
        return (1 if not doc.pinned else 0, 0.0, doc.retrieval_rank)
    grade = doc.grade / best if best > 0 else 0.0
    blend = ((1 - config.retrieval_weight) * grade
             + config.retrieval_weight / doc.retrieval_rank)
    return (0, -(blend + (2.0 if doc.pinned else 0.0)), doc.retrieval_rank)


def _kept(doc: _Doc, best: float, config: SelectionConfig) -> bool:
    if doc.pinned or doc.grade is None:
        return True
    off_topic = config.heuristic_floor_share * best if doc.heuristic else config.floor_min
    if doc.retrieval_rank <= config.floor and doc.grade >= off_topic:
        return True
    return doc.grade >= config.threshold and doc.grade >= config.relative * best


def ranked_documents(candidates: Sequence[Candidate], config: SelectionConfig) -> list[_Doc]:
    """The kept documents, best first (empty when the question is not answerable)."""
    docs = _documents(candidates)
    if not docs or not _answerable(docs, config.threshold):
        return []
    best = max((d.grade for d in docs if d.grade is not None), default=0.0)
    kept = [d for d in docs if _kept(d, best, config)]
    return sorted(kept, key=lambda d: _priority(d, best, config))


def _chunk_passes(candidate: Candidate, config: SelectionConfig) -> bool:
    score = _checked(candidate)
    return score is None or score >= config.threshold


def select(candidates: Sequence[Candidate], config: SelectionConfig) -> list[Candidate]:
    """Return every candidate (in rank order); the chosen ones have `selected` set and their
    `position` in the order the answer model sees them (1 = first)."""
    chosen: list[str] = []
    for doc in ranked_documents(candidates, config):
        passing = [doc.chunks[0], *(c for c in doc.chunks[1:] if _chunk_passes(c, config))]
        for candidate in passing[:config.per_document]:
            if len(chosen) < config.max_chunks:
                chosen.append(candidate.chunk.chunk_id)
    position = {chunk_id: n for n, chunk_id in enumerate(chosen, start=1)}
    return [replace(c, selected=c.chunk.chunk_id in position,
                    position=position.get(c.chunk.chunk_id, 0)) for c in candidates]


def selected_in_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The selected candidates, best first: the order the answer model sees them in."""
    return sorted((c for c in candidates if c.selected), key=lambda c: (c.position, c.rank))
