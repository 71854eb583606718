"""The notes every platform adds under an answer, decided in one place."""

from __future__ import annotations

from rag import messages
from rag.i18n import tr
from rag.types import Answer, AnswerStatus, GradeSource


def answer_notes(answer: Answer) -> list[str]:
    """Small print for an answer: unchecked sources, claims without citations."""
    notes = []
    if answer.status is AnswerStatus.DEGRADED and not answer.extractive:
        notes.append(tr(messages.DEGRADED_NOTE))
    if answer.status is AnswerStatus.NO_ANSWER and _some_unchecked(answer):
        # "Not covered" is only as sure as the grading behind it.
        notes.append(tr(messages.UNCHECKED_NO_ANSWER_NOTE))
    if answer.uncited_claims:
        notes.append(tr(messages.UNCITED_NOTE))
    return notes


def error_text(answer: Answer) -> str:
    return messages.with_reference(answer.text, answer.question.correlation_id)


def _some_unchecked(answer: Answer) -> bool:
    return any(c.grade is not None and c.grade.source is GradeSource.FALLBACK
               for c in answer.candidates)
