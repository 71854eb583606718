"""One real 3-node Weaviate cluster for this package (started once), and what replicas share."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from tests.cluster.replicas import fresh_database
from tests.cluster.weaviate_cluster import WeaviateCluster
from tests.conftest import WEAVIATE_VERSION, index_config, unique_collection
from tests.rag.corpus import CHUNKS
from tests.sync.conftest import article, write
from weaviate_server.install import cached_binary, find_binary


@pytest.fixture(scope="package")
def weaviate_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeaviateCluster]:
    explicit = os.environ.get("SIFT_WEAVIATE_BINARY")
    binary = find_binary(WEAVIATE_VERSION, Path(explicit) if explicit else None)
    if binary is None:
        pytest.fail(f"No Weaviate {WEAVIATE_VERSION} binary at {cached_binary(WEAVIATE_VERSION)}"
                    ": run `sift weaviate install` (or `make install`).", pytrace=False)
    cluster = WeaviateCluster(binary, tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def database_url(postgres_url: str) -> Iterator[str]:
    """A fresh database on the session's PostgreSQL, shared by the replicas of one test."""
    yield from fresh_database(postgres_url)


@pytest.fixture
def corpus_folder(tmp_path: Path) -> Path:
    """The test corpus (tests/rag/corpus.py) as Markdown files for a folder source "kb":
    replicas sync it in, and keep it (a served Sift prunes sources it is not configured with)."""
    folder = tmp_path / "kb"
    for chunk in CHUNKS:
        write(folder, f"{chunk.doc_id}.md", article(chunk.title, chunk.text))
    return folder


@pytest.fixture
async def cluster_collection(weaviate_cluster: WeaviateCluster, embedder: LocalEmbedder
                             ) -> AsyncIterator[str]:
    """A collection name for one test (the first replica creates it); dropped afterwards."""
    name = unique_collection("Replicas")
    yield name
    config = replace(index_config(weaviate_cluster.nodes[0], name), replication_factor=3)
    index = WeaviateIndex(config, embedder.name, embedder.dimension)
    await index.connect(ensure=False)
    await index.drop()
    await index.close()
