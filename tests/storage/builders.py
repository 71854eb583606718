"""Small builders of rag values for storage tests."""

from __future__ import annotations

from collections.abc import Sequence

from rag.types import (
    Answer,
    AnswerStatus,
    AskContext,
    Candidate,
    Chunk,
    Citation,
    Grade,
    GradeSource,
    Mode,
    Platform,
    Question,
    Usage,
)


def chunk(doc: str, n: int = 0, *, content: str = "v1") -> Chunk:
    return Chunk(chunk_id=f"{doc}#{n}", doc_id=doc, source="kb", title=f"Title of {doc}",
                 text=f"text of {doc} {n}", url=f"https://kb.example/{doc}",
                 content_hash=f"{doc}-{n}-{content}", chunk_index=n)


def cand(doc: str, n: int = 0, *, rank: int = 1, score: float | None = None,
         selected: bool = False, cited: bool = False,
         source: GradeSource = GradeSource.LLM, retrieval: float = 0.5) -> Candidate:
    grade = None if score is None and source is not GradeSource.FALLBACK else Grade(
        score, f"reason {doc}#{n}", source, "claude-haiku")
    return Candidate(rank=rank, chunk=chunk(doc, n), retrieval_score=retrieval, grade=grade,
                     selected=selected, cited=cited)


def answer(question: str = "How do I reset MFA?", candidates: Sequence[Candidate] = (), *,
           status: AnswerStatus = AnswerStatus.ANSWERED, mode: Mode = Mode.ACCURATE,
           text: str = "Reset it in the portal [1].", user: str = "U1",
           platform: Platform = "slack", total_ms: float = 1000.0,
           timings: dict[str, float] | None = None, ab_arm: str = "") -> Answer:
    citations = tuple(Citation(i + 1, c.chunk.doc_id, c.chunk.title, c.chunk.url,
                               c.chunk.chunk_id)
                      for i, c in enumerate(c for c in candidates if c.cited))
    context = AskContext(platform=platform, workspace="T1", channel="C1", thread="171.1",
                         user=user)
    return Answer(
        text=text, status=status, question=Question(question, context, correlation_id="cid-1"),
        search_query=f"search: {question}", mode=mode, citations=citations,
        candidates=tuple(candidates),
        timings_ms=timings if timings is not None else {"retrieve": 100.0, "total": total_ms},
        usage={"grade": Usage(1000, 50, 800, 0, 3)}, models={"grade": "claude-haiku"},
        ab_arm=ab_arm,
    )
