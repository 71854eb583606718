"""Query vectors remembered: a repeated question (a popular one, a retry) skips the model."""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Sequence

from rag.ports import Embedder
from rag.types import Vector


class QueryVectorCache:
    """An Embedder whose `embed_query` keeps the newest `size` vectors (LRU); documents pass
    through (sync embeds each chunk once anyway).

    The vectors live in one float32 block of `size` rows (a stdlib `array`: numpy comes only
    with the local model's extra), taken whole when the first vector arrives (3 MB for 2,048
    of 384 dimensions); an evicted question's row goes to the next one. With one small
    allocation per vector instead, the allocator's main heap held 2.5-3 MB more in use after
    the cache filled, each vector kept for minutes among requests' short-lived allocations
    (bench.serve_load, 10 minutes, with a heap sampler: in use 58.3 -> 60.9 MB from minute 1
    to 7; 57.9 -> 57.7 MB with the block).
    """

    def __init__(self, embedder: Embedder, size: int = 2048) -> None:
        self._inner = embedder
        self._size = size
        self._rows: OrderedDict[str, int] = OrderedDict()  # question -> its row, oldest first
        self._block: array[float] | None = None
        self._dimension = 0  # floats in one row, known once the first vector arrives
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
        row = self._rows.get(key)
        if row is not None and self._block is not None:
            self._rows.move_to_end(key)
            self.hits += 1
            start = row * self._dimension
            return self._block[start:start + self._dimension].tolist()
        vector = await self._inner.embed_query(text)
        self._remember(key, vector)
        return vector

    def _remember(self, key: str, vector: Vector) -> None:
        if key in self._rows:  # the same question was embedded meanwhile by another caller
            self._rows.move_to_end(key)
            return
        if self._block is None:
            # Copied from zero bytes, so every page is written now: its memory is the
            # process's from the start rather than creeping up as the cache fills.
            self._dimension = len(vector)
            self._block = array("f", bytes(4 * self._size * self._dimension))
        if len(vector) != self._dimension:
            return  # a row has room for this many floats only; a longer one would shift the rest
        # A free row while the cache fills; then the least recently used question's.
        row = (len(self._rows) if len(self._rows) < self._size
               else self._rows.popitem(last=False)[1])
        start = row * self._dimension
        self._block[start:start + self._dimension] = array("f", vector)
        self._rows[key] = row
