"""One real 3-node Weaviate cluster for the cluster tests (started once: it takes seconds)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.weaviate.install import cached_binary, find_binary
from tests.cluster.weaviate_cluster import WeaviateCluster
from tests.conftest import WEAVIATE_VERSION


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
