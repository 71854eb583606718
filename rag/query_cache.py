"""Query vectors remembered: a repeated question (a popular one, a retry) skips the model."""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Sequence

from rag.ports import Embedder
from rag.types import Vector


class QueryVectorCache:
    """An Embedder whose `embed_query` keeps the newest `size` vectors (LRU); documents pass
    through (sync embeds each chunk once anyway)."""

    def __init__(self, embedder: Embedder, size: int = 2048) -> None:
        self._inner = embedder
        self._size = size
        # Packed floats: 1.5 KB a vector instead of ~12 KB as a list of Python floats, so a full
        # cache is ~3 MB (a 10-minute load run saw RSS climb ~30 MB until the cache filled).
        self._vectors: OrderedDict[str, array[float]] = OrderedDict()
        self.hits = 0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return await self._inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Vector:
        key = " ".join(text.split()).lower()
        found = self._vectors.get(key)
        if found is not None:
            self._vectors.move_to_end(key)
            self.hits += 1
            return list(found)
        vector = await self._inner.embed_query(text)
        self._vectors[key] = array("f", vector)
        if len(self._vectors) > self._size:
            self._vectors.popitem(last=False)
        return vector
