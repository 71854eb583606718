"""What the HTTP API and the MCP tools take and give: pydantic models, validated at the edge
and described once (the OpenAPI document and MCP's schemas are made from them)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rag.lookup import Document, Passage
from rag.types import Answer


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AskRequest(_In):
    question: str = Field(min_length=1, description="The question, in the asker's words.")
    mode: Literal["accurate", "fast"] | None = Field(
        None, description="accurate: a model grades every candidate; fast: heuristic grading "
        "and quoted excerpts. Default: Sift's configured mode.")


class SearchRequest(_In):
    query: str = Field(min_length=1, description="What to look for.")
    limit: int = Field(8, ge=1, le=50, description="How many passages at most.")


class VoteRequest(_In):
    vote: Literal[1, -1] = Field(description="1: the answer helped; -1: it did not.")
    comment: str | None = Field(None, max_length=2000, description="What was missing or wrong.")


class Citation(BaseModel):
    n: int = Field(description="The [n] marker in the answer's text.")
    doc_id: str
    title: str
    url: str


class AskResult(BaseModel):
    id: str = Field(description="The answer's id, for POST /api/v1/answers/{id}/vote; empty "
                    "when the answer cannot be voted on.")
    status: Literal["answered", "degraded", "no_answer", "not_indexed", "error"] = Field(
        description="answered; degraded (made with a fallback); no_answer (the knowledge base "
        "does not cover it); not_indexed (a first sync is still running); error.")
    text: str = Field(description="The answer in Markdown, citing sources as [n].")
    citations: list[Citation]
    mode: str

    @classmethod
    def of(cls, answer: Answer, ref: str) -> AskResult:
        return cls(id=ref, status=answer.status.value, text=answer.text, mode=answer.mode.value,
                   citations=[Citation(n=c.n, doc_id=c.doc_id, title=c.title, url=c.url)
                              for c in answer.citations])


class PassageOut(BaseModel):
    doc_id: str = Field(description="The document's id, for get_document / GET documents/{id}.")
    title: str
    url: str
    source: str = Field(description="The configured source the document comes from.")
    section: str
    text: str
    score: float = Field(description="Retrieval score after the document prior; higher is "
                         "more relevant.")
    updated_at: datetime | None = Field(None, description="Last change at its platform.")

    @classmethod
    def of(cls, p: Passage) -> PassageOut:
        return cls(doc_id=p.doc_id, title=p.title, url=p.url, source=p.source,
                   section=p.section, text=p.text, score=p.score, updated_at=p.updated_at)


class SearchResult(BaseModel):
    passages: list[PassageOut]


class DocumentOut(BaseModel):
    doc_id: str
    title: str
    url: str
    source: str
    text: str = Field(description="The whole text, in Markdown.")
    updated_at: datetime | None = None

    @classmethod
    def of(cls, d: Document) -> DocumentOut:
        return cls(doc_id=d.doc_id, title=d.title, url=d.url, source=d.source, text=d.text,
                   updated_at=d.updated_at)


class VoteResult(BaseModel):
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details: `detail` is the one sentence to show."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    reference: str = Field("", description="A correlation id the operator finds in the log.")


class ResourceMetadata(BaseModel):
    """RFC 9728's protected resource metadata: where a client learns how to get a token."""

    resource: str
    authorization_servers: list[str] | None = None  # the console's OpenID provider, if any
    bearer_methods_supported: list[str] = ["header"]
    resource_name: str = "Sift"
    resource_documentation: str | None = None
