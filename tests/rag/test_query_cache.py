"""The query-vector cache: repeats skip the model, the oldest entry leaves first."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from rag.query_cache import QueryVectorCache
from rag.types import Vector


class CountingEmbedder:
    name, dimension = "counting", 2

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents = 0

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.documents += len(texts)
        return [[float(len(t)), 1.0] for t in texts]

    async def embed_query(self, text: str) -> Vector:
        self.queries.append(text)
        return [float(len(text)), 0.0]


async def test_a_repeated_question_is_embedded_once() -> None:
    inner = CountingEmbedder()
    cache = QueryVectorCache(inner, size=2)
    first = await cache.embed_query("How do I reset MFA?")
    again = await cache.embed_query("  how do I   reset mfa?")  # spacing and case don't count
    assert first == again and inner.queries == ["How do I reset MFA?"] and cache.hits == 1
    again.append(9.0)  # a caller changing its copy must not change the cache
    assert await cache.embed_query("How do I reset MFA?") == first


async def test_the_least_recently_used_vector_is_dropped() -> None:
    inner = CountingEmbedder()
    cache = QueryVectorCache(inner, size=2)
    for text in ("a", "b", "a", "c", "b"):
        await cache.embed_query(text)
    assert inner.queries == ["a", "b", "c", "b"]  # "b" was the oldest when "c" came


async def test_documents_pass_through() -> None:
    inner = CountingEmbedder()
    cache = QueryVectorCache(inner)
    assert await cache.embed_documents(["xy"]) == [[2.0, 1.0]] and inner.documents == 1
    assert (cache.name, cache.dimension) == ("counting", 2)


async def test_a_models_float32_vector_comes_back_exactly() -> None:
    class Float32Embedder(CountingEmbedder):
        async def embed_query(self, text: str) -> Vector:
            self.queries.append(text)
            return [0.1234567, -0.9876543, 1e-7]  # not exact in float32 until packed

    inner = Float32Embedder()
    cache = QueryVectorCache(inner)
    model_output = [float(x) for x in np.array([0.1234567, -0.9876543, 1e-7], dtype=np.float32)]
    await cache.embed_query("q")
    # The cache packs as float32, so what comes back is what a float32 model returned.
    assert await cache.embed_query("q") == model_output and cache.hits == 1


async def test_questions_embedded_at_once_take_one_row() -> None:
    """Two askers of one new question both reach the model; the cache keeps one row for it, so
    no row is lost and every other question keeps its own vector."""

    class SlowEmbedder(CountingEmbedder):
        async def embed_query(self, text: str) -> Vector:
            await asyncio.sleep(0)
            return await super().embed_query(text)

    inner = SlowEmbedder()
    cache = QueryVectorCache(inner, size=3)
    await asyncio.gather(cache.embed_query("same"), cache.embed_query("same"))
    for text in ("a", "bb", "same", "ccc"):
        await cache.embed_query(text)
    # "a" was the oldest when "ccc" came: three rows, three vectors, none shared.
    assert inner.queries == ["same", "same", "a", "bb", "ccc"]
    assert [await cache.embed_query(t) for t in ("bb", "same", "ccc")] == [
        [2.0, 0.0], [4.0, 0.0], [3.0, 0.0]]
    assert inner.queries[-1] == "ccc" and cache.hits == 4


async def test_memory_is_one_block_however_many_questions() -> None:
    inner = CountingEmbedder()
    cache = QueryVectorCache(inner, size=4)
    await cache.embed_query("first")
    block = cache._block
    for i in range(50):
        await cache.embed_query(f"question {i}")
    assert cache._block is block and block is not None and len(block) == 4 * 2
    assert await cache.embed_query("question 49") == [11.0, 0.0] and cache.hits == 1


async def test_a_vector_of_another_length_is_not_kept() -> None:
    class ChangingEmbedder(CountingEmbedder):
        async def embed_query(self, text: str) -> Vector:
            self.queries.append(text)
            return [1.0] * len(text)

    inner = ChangingEmbedder()
    cache = QueryVectorCache(inner, size=4)
    await cache.embed_query("ab")
    assert await cache.embed_query("abc") == [1.0, 1.0, 1.0]
    assert await cache.embed_query("ab") == [1.0, 1.0] and cache.hits == 1
    assert await cache.embed_query("abc") == [1.0, 1.0, 1.0] and inner.queries == [
        "ab", "abc", "abc"]
