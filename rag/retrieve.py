"""Broad retrieval: hybrid search for each search phrase, merged into one ranked candidate list."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rag.config import RetrievalConfig
from rag.errors import RetrievalError
from rag.patience import Patience, Retrying
from rag.ports import Diversity, Embedder, SearchIndex
from rag.types import Candidate, SearchFilters, SearchHit


def merge(result_lists: Sequence[Sequence[SearchHit]], limit: int) -> list[Candidate]:
    """Interleave the lists rank by rank (the first phrase leads), dropping repeated chunks."""
    seen: dict[str, SearchHit] = {}
    depth = max((len(r) for r in result_lists), default=0)
    for position in range(depth):
        for hits in result_lists:
            if position < len(hits):
                hit = hits[position]
                current = seen.get(hit.chunk.chunk_id)
                if current is None:
                    seen[hit.chunk.chunk_id] = hit
                elif hit.score > current.score:
                    seen[hit.chunk.chunk_id] = SearchHit(current.chunk, hit.score)
    ranked = list(seen.values())[:limit]
    return [Candidate(rank=i, chunk=h.chunk, retrieval_score=h.score)
            for i, h in enumerate(ranked, start=1)]


class Retriever:
    def __init__(self, index: SearchIndex, embedder: Embedder, config: RetrievalConfig) -> None:
        self._index = index
        self._embedder = embedder
        self._config = config
        self._retrying = Retrying(Patience(config.outage_wait_s), _unreachable)

    async def retrieve(self, phrases: Sequence[str], filters: SearchFilters | None,
                       *, alpha: float | None = None, limit: int | None = None,
                       diverse: bool | None = None) -> list[Candidate]:
        """About `limit` candidates for the phrases (the first is the standalone question).

        `alpha`, `limit` and `diverse` override the configured values for one call.
        """
        limit = limit or self._config.limit
        diverse = self._config.diversity if diverse is None else diverse
        diversity = Diversity(self._config.diversity_balance) if diverse else None
        vectors = await asyncio.gather(*(self._embedder.embed_query(p) for p in phrases))

        async def one(phrase: str, vector: list[float]) -> list[SearchHit]:
            return await self._retrying.call("search", lambda: self._index.search(
                phrase, vector, limit=limit,
                alpha=self._config.alpha if alpha is None else alpha,
                diversity=diversity, filters=filters))

        results = await asyncio.gather(*(one(p, v) for p, v in zip(phrases, vectors, strict=True)))
        return merge(results, limit)


def _unreachable(exc: BaseException) -> bool:
    """The index server is away (a restart): a search may succeed once it is back."""
    return isinstance(exc, RetrievalError) and exc.unreachable
