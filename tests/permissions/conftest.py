"""Canary fixtures: the canary documents synced (fail-closed access and all) into a real
Weaviate collection, and Claude echoing the markers its prompt holds."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from sync.connectors.folder import FolderConnector
from sync.job import SyncJob
from tests.conftest import index_config, unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.memory_sync_state import MemorySyncState
from tests.permissions.canary import markers_in, write_canaries
from weaviate_server.process import ManagedWeaviate


@pytest.fixture(scope="module")
async def canary_collection(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder,
                            tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    root = tmp_path_factory.mktemp("canary-kb")
    write_canaries(root)
    name = unique_collection("CanaryP")
    index = WeaviateIndex(index_config(weaviate_server, name), embedder.name, embedder.dimension)
    await index.connect()
    await SyncJob("canary", FolderConnector(root), index, embedder, MemorySyncState()).run()
    yield name
    await index.drop()
    await index.close()


def echo_markers(prompt: str) -> str:
    """An answer naming every marker its excerpts hold, citing every excerpt."""
    cites = "".join(f"[{n}]" for n in range(1, prompt.count("<excerpt n=") + 1))
    return "Codes: " + " ".join(sorted(markers_in(prompt))) + f" {cites}."


@pytest.fixture
def echoing_claude(fake_anthropic: FakeAnthropic) -> FakeAnthropic:
    fake_anthropic.grade_rule = lambda q, d: (0.9, "Names the budget code.")
    fake_anthropic.answer_from_prompt = echo_markers
    return fake_anthropic
