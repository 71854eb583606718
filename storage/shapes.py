"""Read-only shapes of the values storage records; rag's dataclasses satisfy them structurally."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class ContextLike(Protocol):
    @property
    def platform(self) -> str: ...

    @property
    def workspace(self) -> str: ...

    @property
    def channel(self) -> str: ...

    @property
    def thread(self) -> str: ...

    @property
    def user(self) -> str: ...


class QuestionLike(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def context(self) -> ContextLike: ...

    @property
    def correlation_id(self) -> str: ...


class ChunkLike(Protocol):
    @property
    def chunk_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def access(self) -> tuple[str, ...]: ...


class GradeLike(Protocol):
    @property
    def score(self) -> float | None: ...

    @property
    def reason(self) -> str: ...

    @property
    def source(self) -> str: ...


class CandidateLike(Protocol):
    @property
    def rank(self) -> int: ...

    @property
    def chunk(self) -> ChunkLike: ...

    @property
    def retrieval_score(self) -> float: ...

    @property
    def grade(self) -> GradeLike | None: ...

    @property
    def selected(self) -> bool: ...

    @property
    def cited(self) -> bool: ...


class CitationLike(Protocol):
    @property
    def n(self) -> int: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def chunk_id(self) -> str: ...


class UsageLike(Protocol):
    @property
    def input_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...

    @property
    def cache_read_tokens(self) -> int: ...

    @property
    def cache_write_tokens(self) -> int: ...

    @property
    def calls(self) -> int: ...


class AnswerLike(Protocol):
    """Exactly what `InteractionRepository.record` reads of an answer."""

    @property
    def text(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def question(self) -> QuestionLike: ...

    @property
    def search_query(self) -> str: ...

    @property
    def mode(self) -> str: ...

    @property
    def ab_arm(self) -> str: ...

    @property
    def candidates(self) -> Sequence[CandidateLike]: ...

    @property
    def citations(self) -> Sequence[CitationLike]: ...

    @property
    def timings_ms(self) -> Mapping[str, float]: ...

    @property
    def usage(self) -> Mapping[str, UsageLike]: ...

    @property
    def models(self) -> Mapping[str, str]: ...

    @property
    def llm_provider(self) -> str: ...


class GradeKeyLike(Protocol):
    """The grade cache key (rag's `GradeKey`): hashable, compared by value."""

    @property
    def question_hash(self) -> str: ...

    @property
    def chunk_id(self) -> str: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def grader_version(self) -> str: ...

    def __hash__(self) -> int: ...


class ScoredLike(Protocol):
    """A grade to cache; one without a score (a grader failure) is never stored."""

    @property
    def score(self) -> float | None: ...

    @property
    def reason(self) -> str: ...

    @property
    def model(self) -> str: ...


class RunCountsLike(Protocol):
    @property
    def added(self) -> int: ...

    @property
    def updated(self) -> int: ...

    @property
    def deleted(self) -> int: ...

    @property
    def unchanged(self) -> int: ...

    @property
    def failed(self) -> int: ...

    @property
    def chunks_written(self) -> int: ...
