"""An in-process index with the same contract as WeaviateIndex: toy BM25 + cosine, fused."""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rag.ports import Diversity
from rag.types import Chunk, SearchFilters, SearchHit, Vector

_WORD = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _normalise(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {k: (v - low) / span if span else 1.0 for k, v in scores.items()}


def _allowed(chunk: Chunk, filters: SearchFilters | None) -> bool:
    if filters is None:
        return True
    if filters.access is not None and not set(chunk.access) & set(filters.access):
        return False
    if chunk.doc_id in filters.exclude_docs:
        return False
    if filters.sources and chunk.source not in filters.sources:
        return False
    if filters.tags and not {t.lower() for t in chunk.tags} & {t.lower() for t in filters.tags}:
        return False
    return not (filters.doc_types and chunk.doc_type not in filters.doc_types)


class MemoryIndex:
    def __init__(self) -> None:
        self.chunks: dict[str, tuple[Chunk, Vector]] = {}
        self.searches: list[str] = []

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int:
        for chunk, vector in zip(chunks, vectors, strict=True):
            self.chunks[chunk.chunk_id] = (chunk, list(vector))
        return len(chunks)

    async def delete_document(self, source: str, doc_id: str, keep_hash: str = "") -> int:
        doomed = [k for k, (c, _) in self.chunks.items()
                  if c.source == source and c.doc_id == doc_id
                  and (not keep_hash or c.content_hash != keep_hash)]
        for key in doomed:
            del self.chunks[key]
        return len(doomed)

    async def delete_source(self, source: str) -> int:
        doomed = [k for k, (c, _) in self.chunks.items() if c.source == source]
        for key in doomed:
            del self.chunks[key]
        return len(doomed)

    async def list_documents(self, source: str) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for chunk, _ in self.chunks.values():
            if chunk.source == source:
                found.setdefault(chunk.doc_id, set()).add(chunk.content_hash)
        return found

    async def chunk_ids(self, source: str, doc_id: str, content_hash: str) -> set[str]:
        return {c.chunk_id for c, _ in self.chunks.values()
                if (c.source, c.doc_id, c.content_hash) == (source, doc_id, content_hash)}

    async def count_by_source(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for chunk, _ in self.chunks.values():
            counts[chunk.source] = counts.get(chunk.source, 0) + 1
        return counts

    async def count_by_language(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for chunk, _ in self.chunks.values():
            counts[chunk.language] = counts.get(chunk.language, 0) + 1
        return counts

    async def count(self, source: str | None = None) -> int:
        return sum(1 for c, _ in self.chunks.values() if source is None or c.source == source)

    def _bm25(self, query: str, pool: list[Chunk]) -> dict[str, float]:
        words = set(_terms(query))
        docs = {c.chunk_id: Counter(_terms(f"{c.title} {c.title} {c.section} {c.text}"))
                for c in pool}
        n = len(docs) or 1
        scores: dict[str, float] = {}
        for chunk_id, counts in docs.items():
            score = 0.0
            for word in words & counts.keys():
                df = sum(1 for other in docs.values() if word in other)
                score += math.log(1 + (n - df + 0.5) / (df + 0.5)) * counts[word] / (
                    counts[word] + 1.2)
            if score > 0:
                scores[chunk_id] = score
        return scores

    async def search(self, query: str, vector: Vector | None, *, limit: int = 20,
                     alpha: float = 0.5, diversity: Diversity | None = None,
                     filters: SearchFilters | None = None) -> list[SearchHit]:
        self.searches.append(query)
        pool = [c for c, _ in self.chunks.values() if _allowed(c, filters)]
        keyword = _normalise(self._bm25(query, pool)) if alpha < 1 else {}
        semantic = (_normalise({c.chunk_id: _cosine(vector, self.chunks[c.chunk_id][1])
                                for c in pool}) if vector is not None and alpha > 0 else {})
        fused = {k: alpha * semantic.get(k, 0.0) + (1 - alpha) * keyword.get(k, 0.0)
                 for k in keyword.keys() | semantic.keys()}
        ranked = sorted(fused.items(), key=lambda kv: kv[1], reverse=True)[:limit]
        return [SearchHit(self.chunks[k][0], score) for k, score in ranked]


class GatedIndex:
    """An index whose searches wait until `gate` opens: a question held in progress."""

    def __init__(self, inner: Any, gate: asyncio.Event) -> None:
        self.inner = inner
        self.gate = gate
        self.waiting = 0  # searches started so far

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        self.waiting += 1
        await self.gate.wait()
        return await self.inner.search(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
