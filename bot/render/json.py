"""The stable JSON form of an Answer (`sift ask --json`); other tools rely on these keys."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rag.types import Answer, Candidate


def _candidate(c: Candidate) -> dict[str, Any]:
    grade = None if c.grade is None else {
        "score": c.grade.score, "reason": c.grade.reason, "source": c.grade.source.value}
    return {
        "rank": c.rank, "chunk_id": c.chunk.chunk_id, "doc_id": c.chunk.doc_id,
        "title": c.chunk.title, "url": c.chunk.url, "section": c.chunk.section,
        "retrieval_score": round(c.retrieval_score, 4), "grade": grade,
        "selected": c.selected, "cited": c.cited,
    }


def answer_to_dict(answer: Answer) -> dict[str, Any]:
    return {
        "text": answer.text,
        "status": answer.status.value,
        "mode": answer.mode.value,
        "question": answer.question.text,
        "search_query": answer.search_query,
        "citations": [asdict(c) for c in answer.citations],
        "suggestions": [asdict(c) for c in answer.suggestions],
        "candidates": [_candidate(c) for c in answer.candidates],
        "timings_ms": dict(answer.timings_ms),
        "usage": {stage: asdict(u) for stage, u in answer.usage.items()},
        "models": dict(answer.models),
        "extractive": answer.extractive,
        "uncited_claims": answer.uncited_claims,
        "correlation_id": answer.question.correlation_id,
        "interaction_id": answer.interaction_id,
    }
