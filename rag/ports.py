"""The small protocols through which rag/ reaches the outside world (index, LLM, storage)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from rag.types import Answer, Grade, QuestionImage, SearchFilters, SearchHit, Usage, Vector


class Embedder(Protocol):
    """Turns text into vectors. `name` and `dimension` identify the vector space of an index."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]: ...

    async def embed_query(self, text: str) -> Vector: ...


@dataclass(frozen=True)
class Diversity:
    """MMR over the fused results: `balance` 1.0 is pure relevance, 0.0 pure novelty."""

    balance: float = 0.8


class SearchIndex(Protocol):
    async def search(
        self,
        query: str,
        vector: Vector | None,
        *,
        limit: int,
        alpha: float,
        diversity: Diversity | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]: ...


@dataclass(frozen=True)
class LLMRequest:
    """One Messages call. `system` blocks after `cache_from` form the cacheable prefix."""

    model: str
    system: str
    messages: tuple[tuple[str, str], ...]  # (role, text)
    max_tokens: int
    json_schema: Mapping[str, object] | None = None
    timeout_s: float | None = None
    cache_system: bool = False
    purpose: str = ""  # for logs: "grade", "answer", "understand"
    images: tuple[QuestionImage, ...] = ()  # shown with the last user message


@dataclass(frozen=True)
class LLMResponse:
    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""


# Receives text as it is produced: a delta from the model, or a preview of the answer so far.
TextSink = Callable[[str], Awaitable[None]]


class LLM(Protocol):
    async def complete(self, request: LLMRequest) -> LLMResponse: ...

    async def stream(self, request: LLMRequest, on_text: TextSink) -> LLMResponse: ...


@dataclass(frozen=True)
class GradeKey:
    """A cached grade is only valid for the same question, chunk content and grader version."""

    question_hash: str
    chunk_id: str
    content_hash: str
    grader_version: str


class CachedGrade(Protocol):
    @property
    def score(self) -> float: ...

    @property
    def reason(self) -> str: ...

    @property
    def model(self) -> str: ...


class GradeCache(Protocol):
    """Blocking calls; the pipeline runs them off the event loop. `Grade` satisfies CachedGrade."""

    def get_many(self, keys: Sequence[GradeKey]) -> Mapping[GradeKey, CachedGrade]: ...

    def put_many(self, grades: Mapping[GradeKey, Grade]) -> None: ...


class SyncProgress(Protocol):
    def first_syncs_running(self) -> list[str]:
        """Sources whose first sync is under way (none finished yet)."""
        ...


class ReviewDates(Protocol):
    def overdue(self, doc_ids: Sequence[str]) -> Mapping[str, datetime | None]:
        """Of these documents, those past their review date, with when each was last
        verified (None: never)."""
        ...


class InteractionRecorder(Protocol):
    """Stores an answer with its candidates and updates document statistics; returns its id."""

    def record(self, answer: Answer) -> int: ...


@runtime_checkable
class LanguageCounts(Protocol):
    """How many indexed chunks are in each language (the index: rag/index.py)."""

    async def count_by_language(self) -> dict[str, int]: ...
