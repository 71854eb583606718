"""What the push scenarios share: waiting with a deadline, and reading the served index."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from rag.types import SearchFilters
from tests.scenarios.stack import ServedSift

PUSH_DEADLINE_S = 5.0  # the promise: a pushed change is searchable within 5 s


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float = PUSH_DEADLINE_S
                ) -> float:
    """Seconds until `check` holds; fails past `timeout_s`."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"not reached within {timeout_s}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


class Probe:
    """The served Sift's Weaviate collection, read the way a question reads it."""

    def __init__(self, index: WeaviateIndex, embedder: LocalEmbedder, source: str) -> None:
        self.index, self.embedder, self.source = index, embedder, source

    async def ids(self) -> set[str]:
        return set(await self.index.list_documents(self.source))

    async def finds(self, doc_id: str, phrase: str) -> bool:
        """A hybrid search for `phrase` in this source returns `doc_id` holding that text."""
        hits = await self.index.search(phrase, await self.embedder.embed_query(phrase),
                                       limit=5, filters=SearchFilters(sources=(self.source,)))
        return any(h.chunk.doc_id == doc_id and phrase in h.chunk.text for h in hits)

    async def gone(self, doc_id: str) -> bool:
        return doc_id not in await self.ids()

    async def settled_empty(self, pause_s: float = 1.0) -> None:
        """Nothing was indexed for this source, given time enough for a sync to have run."""
        await asyncio.sleep(pause_s)
        assert await self.ids() == set()


@asynccontextmanager
async def probe(sift: ServedSift, embedder: LocalEmbedder, source: str
                ) -> AsyncIterator[Probe]:
    index = sift.app.index()
    await index.connect(ensure=False)
    try:
        yield Probe(index, embedder, source)
    finally:
        await index.close()
