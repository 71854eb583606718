"""Typed values that flow through Sift: chunks, questions, candidates, grades and answers."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

Vector = list[float]


@dataclass(frozen=True)
class Chunk:
    """One indexed piece of a source document, with the metadata used to filter and grade it."""

    chunk_id: str
    doc_id: str
    source: str
    title: str
    text: str
    url: str = ""
    section: str = ""
    tags: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    doc_type: str = ""
    subtype: str = ""
    language: str = ""
    published_at: datetime | None = None
    updated_at: datetime | None = None
    access: tuple[str, ...] = ("public",)
    content_hash: str = ""
    chunk_index: int = 0
    tokens: int = 0


@dataclass(frozen=True)
class SearchFilters:
    """Restrictions applied inside the index; `access` limits results to the asker's groups."""

    access: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    doc_types: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    exclude_docs: tuple[str, ...] = ()  # documents an admin hid: never returned

    @classmethod
    def for_context(cls, context: AskContext) -> SearchFilters:
        """What one question may search: the asker's access, and the channel's scope."""
        return cls(access=context.access_groups, sources=context.sources or None,
                   doc_types=context.doc_types or None, tags=context.tags or None)


@dataclass(frozen=True)
class SearchHit:
    """A chunk returned by the index with its retrieval score (higher is better)."""

    chunk: Chunk
    score: float


# Where a question came from: a chat surface's name ("slack", "web": each surface names its
# own, bot/surfaces.py) or the command line's. A name, not an enum: a new surface is no edit
# here.
Platform = str
TERMINAL: Platform = "terminal"


class Mode(enum.StrEnum):
    """`accurate` grades with the LLM; `fast` uses the heuristic grader only."""

    ACCURATE = "accurate"
    FAST = "fast"


@dataclass(frozen=True)
class Turn:
    """One earlier message of a conversation, used to rewrite follow-up questions."""

    role: str  # "user" or "assistant"
    text: str


@dataclass(frozen=True)
class AskContext:
    """Where a question came from; the adapters fill it, storage records it."""

    platform: Platform = TERMINAL
    workspace: str = ""
    channel: str = ""
    thread: str = ""
    user: str = ""
    access_groups: tuple[str, ...] = ("public",)
    # The channel policy's scope: only these sources, tags and document types answer here.
    sources: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    doc_types: tuple[str, ...] = ()
    policy: str = ""  # the policy it ran under ("slack:C0123ABCD", "slack:*")


@dataclass(frozen=True)
class QuestionImage:
    """An image attached to a question, checked and within the model's limits; never stored."""

    media_type: str  # image/png, image/jpeg, image/gif, image/webp
    data: bytes = field(repr=False)
    name: str = ""


@dataclass(frozen=True)
class Question:
    text: str
    context: AskContext = field(default_factory=AskContext)
    history: tuple[Turn, ...] = ()
    mode: Mode | None = None  # None: the configured default (or the A/B split)
    correlation_id: str = ""
    images: tuple[QuestionImage, ...] = ()  # for a model that reads images (bot/chat/files.py)
    attached: str = ""  # what was read from the question's files (`text` holds it too)


class Intent(enum.StrEnum):
    KNOWLEDGE = "knowledge"
    SMALL_TALK = "small_talk"
    ABOUT_BOT = "about_bot"


@dataclass(frozen=True)
class Understanding:
    """The understand stage's output: the standalone question, its search phrases, its intent."""

    standalone: str
    search_phrases: tuple[str, ...]
    intent: Intent = Intent.KNOWLEDGE
    direct_reply: str = ""
    # Without a model, a follow-up's standalone question is the earlier one plus its own words;
    # this is the earlier one, which decides what is on topic ("and in Toronto?" stays about
    # the expense limits while Toronto picks the lines quoted).
    subject: str = ""
    language: str = ""  # the message's language ("de"; "" when unsure), rag/language.py
    corpus_language: str = ""  # the documents' main language, when known
    across: bool = False  # the model was asked for search phrases in the documents' language


class GradeSource(enum.StrEnum):
    LLM = "llm"
    HEURISTIC = "heuristic"
    CACHE = "cache"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class Grade:
    """How well one candidate answers the question: score in [0, 1] and a one-sentence reason.

    A `fallback` grade (the grader failed) has no score: a failure is not a verdict of
    irrelevance, so it must never be stored or treated as 0.
    """

    score: float | None
    reason: str
    source: GradeSource
    model: str = ""


@dataclass(frozen=True)
class Candidate:
    """A retrieved chunk as it moves through grading and selection."""

    rank: int  # 1-based retrieval rank
    chunk: Chunk
    retrieval_score: float
    grade: Grade | None = None
    selected: bool = False
    cited: bool = False
    pinned: bool = False  # an admin pinned its document: first, and always selected
    position: int = 0  # selected: its place in what the answer model sees (1 = first)


@dataclass(frozen=True)
class Citation:
    n: int
    doc_id: str
    title: str
    url: str
    chunk_id: str


class AnswerStatus(enum.StrEnum):
    ANSWERED = "answered"
    NO_ANSWER = "no_answer"
    # No answer while a source's first sync is still under way: part of the knowledge base is
    # not read yet, so this is not (yet) a gap in it.
    NOT_INDEXED = "not_indexed"
    DEGRADED = "degraded"
    ERROR = "error"


# The outcomes where Sift found nothing to say (what was looked for was not there, or not yet).
UNANSWERED = frozenset({AnswerStatus.NO_ANSWER, AnswerStatus.NOT_INDEXED})


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.calls + other.calls,
        )


@dataclass(frozen=True)
class Answer:
    """Everything the pipeline produced for one question; adapters render it, storage records it."""

    text: str
    status: AnswerStatus
    question: Question
    search_query: str = ""
    mode: Mode = Mode.ACCURATE
    citations: tuple[Citation, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    suggestions: tuple[Citation, ...] = ()  # closest documents when there is no answer
    timings_ms: dict[str, float] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    llm_provider: str = ""  # the model service of `models` (anthropic, bedrock, vertex, openai)
    extractive: bool = False  # quoted passages rather than a generated summary
    uncited_claims: bool = False  # the answer makes claims without any valid citation
    ab_arm: str = ""  # the mode the A/B split chose ("" when no split decided the mode)
    interaction_id: int | None = None
