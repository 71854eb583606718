"""Passages and whole documents for other tools (the API's and MCP's search and get_document):
the answers' retrieval, document prior, hidden documents and access filter, without grading."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, runtime_checkable

from rag.output_policy import OutputPolicy
from rag.prior import DocumentPriors, adjusted, hidden_documents
from rag.retrieve import Retriever
from rag.types import AskContext, Chunk, SearchFilters

log = logging.getLogger(__name__)
URL_CANDIDATES = 50  # a URL is found among this many hits of a search for it


@runtime_checkable
class DocumentStore(Protocol):
    """Where whole documents are read (WeaviateIndex), through the same filters as a search."""

    async def document_chunks(self, filters: SearchFilters, *, doc_id: str = "",
                              url: str = "") -> list[Chunk]: ...

    async def updated_times(self, doc_ids: Sequence[str]) -> dict[str, datetime]: ...


@dataclass(frozen=True)
class Passage:
    """One search result: a chunk's text with where it comes from."""

    doc_id: str
    title: str
    url: str
    source: str
    section: str
    text: str
    score: float
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Document:
    """A whole document as its reader may see it: every chunk, in order."""

    doc_id: str
    title: str
    url: str
    source: str
    text: str
    updated_at: datetime | None = None


class Lookup:
    """`search` and `document` under the asker's `AskContext` (its access groups and the
    policy's scope), exactly as an answer would retrieve; a document nobody may read here and
    one that does not exist look the same: None."""

    def __init__(self, retriever: Retriever, documents: DocumentStore | None,
                 priors: DocumentPriors | None, policy: OutputPolicy) -> None:
        self._retriever = retriever
        self._documents = documents
        self._priors = priors
        self._policy = policy

    async def _filters(self, context: AskContext) -> SearchFilters:
        # Always filtered: no groups matches nothing (an empty list is never "everything").
        return replace(SearchFilters.for_context(context),
                       exclude_docs=await hidden_documents(self._priors))

    async def search(self, context: AskContext, query: str, limit: int) -> list[Passage]:
        candidates = await self._retriever.retrieve([query], await self._filters(context),
                                                    limit=limit)
        ranked = await adjusted(self._priors, candidates)
        dates = await self._dates([c.chunk.doc_id for c in ranked])
        return [Passage(c.chunk.doc_id, c.chunk.title, c.chunk.url, c.chunk.source,
                        c.chunk.section, self._policy.links(c.chunk.text, [c.chunk.url]),
                        round(c.retrieval_score, 4), dates.get(c.chunk.doc_id))
                for c in ranked]

    async def _dates(self, doc_ids: list[str]) -> dict[str, datetime]:
        if self._documents is None:
            return {}
        try:
            return await self._documents.updated_times(sorted(set(doc_ids)))
        except Exception:  # the passages stand without their dates; the log says why
            log.exception("could not read the documents' dates")
            return {}

    async def document(self, context: AskContext, *, doc_id: str = "",
                       url: str = "") -> Document | None:
        if self._documents is None:
            return None
        filters = await self._filters(context)
        if not doc_id and url:  # the URL is not a filterable property: a search finds it
            hits = await self._retriever.retrieve([url], filters, limit=URL_CANDIDATES)
            doc_id = next((c.chunk.doc_id for c in hits if c.chunk.url == url), "")
            if not doc_id:
                return None
        chunks = await self._documents.document_chunks(filters, doc_id=doc_id)
        if not chunks:
            return None
        first = chunks[0]
        # A chunk's text carries its headings; a long section's pieces repeat a little of the
        # piece before them (the chunker's overlap).
        text = "\n\n".join(c.text for c in chunks)
        return Document(first.doc_id, first.title, first.url, first.source,
                        self._policy.links(text, [first.url]), first.updated_at)

