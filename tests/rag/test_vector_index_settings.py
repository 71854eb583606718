"""The vector index's settings on a real Weaviate: a new collection is built with them
(compression, ef, the graph's shape); a live one follows what can change (ef, compression
switched on) and says what cannot (the graph's shape, compression switched off)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from rag import index_schema as schema
from rag.index import WeaviateIndex
from rag.index_schema import VectorIndexSettings
from tests.conftest import index_config, unique_collection
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate
DIMENSION = 8


async def stored_index(index: WeaviateIndex) -> Any:
    config = await index._collection.config.get()
    return schema.vector_index_of(config)


async def connected(server: ManagedWeaviate, collection: str,
                    vectors: VectorIndexSettings) -> WeaviateIndex:
    index = WeaviateIndex(replace(index_config(server, collection), vectors=vectors),
                          "test-embedder", DIMENSION)
    await index.connect()
    return index


async def test_a_new_collection_is_built_with_the_settings(
        weaviate_server: ManagedWeaviate) -> None:
    wanted = VectorIndexSettings(ef=96, ef_construction=64, max_connections=16,
                                 compression="rq8")
    index = await connected(weaviate_server, unique_collection(), wanted)
    try:
        found = await stored_index(index)
        assert (found.ef, found.ef_construction, found.max_connections) == (96, 64, 16)
        assert schema.compression_of(found) == "rq8"
    finally:
        await index.drop()
        await index.close()


async def test_the_defaults_leave_vectors_uncompressed(weaviate_server: ManagedWeaviate) -> None:
    index = await connected(weaviate_server, unique_collection(), VectorIndexSettings())
    try:
        found = await stored_index(index)
        assert schema.compression_of(found) == "none"
        assert (found.ef, found.ef_construction, found.max_connections) == (-1, 128, 32)
    finally:
        await index.drop()
        await index.close()


async def test_a_live_collection_follows_ef_and_compression_and_names_the_rest(
        weaviate_server: ManagedWeaviate, caplog: pytest.LogCaptureFixture) -> None:
    name = unique_collection()
    first = await connected(weaviate_server, name, VectorIndexSettings())
    await first.close()
    changed = VectorIndexSettings(ef=200, ef_construction=256, max_connections=64,
                                  compression="rq8")
    with caplog.at_level(logging.WARNING, logger="rag.index"):
        again = await connected(weaviate_server, name, changed)
    try:
        found = await stored_index(again)
        assert found.ef == 200 and schema.compression_of(found) == "rq8"
        assert (found.ef_construction, found.max_connections) == (128, 32)  # fixed at creation
        assert "SIFT_WEAVIATE__EF_CONSTRUCTION applies to a new collection" in caplog.text
        assert "SIFT_WEAVIATE__MAX_CONNECTIONS applies to a new collection" in caplog.text
        await again.close()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="rag.index"):
            again = await connected(weaviate_server, name, replace(changed, compression="none"))
        assert schema.compression_of(await stored_index(again)) == "rq8"  # never undone
        assert "Weaviate cannot undo that" in caplog.text
    finally:
        await again.drop()
        await again.close()
