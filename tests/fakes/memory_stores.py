"""In-memory stand-ins for storage ports (grade cache, recorder), for fast unit tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.ports import GradeKey
from rag.types import Answer, Grade


@dataclass(frozen=True)
class StoredGrade:
    score: float
    reason: str
    model: str


class MemoryGradeCache:
    def __init__(self) -> None:
        self.entries: dict[GradeKey, StoredGrade] = {}
        self.lookups = 0

    def get_many(self, keys: Sequence[GradeKey]) -> dict[GradeKey, StoredGrade]:
        self.lookups += 1
        return {k: self.entries[k] for k in keys if k in self.entries}

    def put_many(self, grades: Mapping[GradeKey, Grade]) -> None:
        for key, grade in grades.items():
            assert grade.score is not None
            self.entries[key] = StoredGrade(grade.score, grade.reason, grade.model)


class MemoryRecorder:
    def __init__(self) -> None:
        self.answers: list[Answer] = []

    def record(self, answer: Answer) -> int:
        self.answers.append(answer)
        return len(self.answers)
