"""Shared fixtures: a throwaway real Weaviate server, the real embedder, fresh index collections."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.settings import WeaviateSettings
from rag.embed import LocalEmbedder
from rag.index import IndexConfig, WeaviateIndex
from tests.browser import browser  # noqa: F401
from tests.crash_report import (  # noqa: F401
    pytest_configure,
    pytest_handlecrashitem,
    pytest_unconfigure,
)
from tests.disk import small_disk  # noqa: F401
from tests.fakes.fixtures import fake_anthropic, fake_slack  # noqa: F401
from tests.fakes.tls import local_ca
from tests.parallel import pytest_collection_modifyitems, pytest_xdist_make_scheduler  # noqa: F401
from tests.pg import own_postgres, postgres_url  # noqa: F401
from weaviate_server.install import cached_binary, find_binary
from weaviate_server.process import ManagedWeaviate, free_ports

WEAVIATE_VERSION = os.environ.get("SIFT_TEST_WEAVIATE_VERSION", WeaviateSettings().version)


@pytest.fixture(scope="session", autouse=True)
def trust_the_local_ca() -> Iterator[None]:
    """HTTPS fakes (the Entra token service: msal accepts only https authorities) carry a
    certificate from a CA made for this run; requests, under msal, trusts it through
    REQUESTS_CA_BUNDLE, as behind a company's TLS-inspecting proxy. Child processes (the CLI
    tests) inherit it."""
    before = os.environ.get("REQUESTS_CA_BUNDLE")
    os.environ["REQUESTS_CA_BUNDLE"] = str(local_ca().bundle)
    yield
    if before is None:
        os.environ.pop("REQUESTS_CA_BUNDLE", None)
    else:
        os.environ["REQUESTS_CA_BUNDLE"] = before


@pytest.fixture(scope="session")
def weaviate_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedWeaviate]:
    """A real Weaviate process on free loopback ports. A missing binary fails, never skips."""
    explicit = os.environ.get("SIFT_WEAVIATE_BINARY")
    binary = find_binary(WEAVIATE_VERSION, Path(explicit) if explicit else None)
    if binary is None:
        pytest.fail(
            f"No Weaviate {WEAVIATE_VERSION} binary at {cached_binary(WEAVIATE_VERSION)} and "
            "SIFT_WEAVIATE_BINARY is not set: run `sift weaviate install` (or `make install`).",
            pytrace=False,
        )
    server = ManagedWeaviate(binary, tmp_path_factory.mktemp("weaviate"), free_ports())
    server.start(timeout_s=120)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    """The real all-MiniLM-L6-v2 model, loaded once per session."""
    return LocalEmbedder(batch_size=32)


def index_config(server: ManagedWeaviate, collection: str) -> IndexConfig:
    return IndexConfig(http_url=server.url, grpc_url=f"127.0.0.1:{server.ports.grpc}",
                       api_key=server.api_key, collection=collection, query_timeout_s=20)


def unique_collection(prefix: str = "Test") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def weaviate_index(weaviate_server: ManagedWeaviate,
                         embedder: LocalEmbedder) -> AsyncIterator[WeaviateIndex]:
    """A connected index over a fresh collection, dropped afterwards."""
    index = WeaviateIndex(index_config(weaviate_server, unique_collection()),
                          embedder.name, embedder.dimension)
    await index.connect()
    yield index
    await index.drop()
    await index.close()

