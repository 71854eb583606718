"""Sift on a real 3-node Weaviate cluster: one node down (the Raft leader, the hardest one to
lose), questions and sync go on; back, it catches up (async replication, on by default for
replicated collections since Weaviate 1.38)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.app import App
from bot.settings import Settings, SourceSettings, SyncSettings, WeaviateSettings
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from tests.cluster.weaviate_cluster import WeaviateCluster
from tests.conftest import unique_collection
from tests.sync.conftest import article, paragraph, write

pytestmark = pytest.mark.weaviate


def cluster_settings(tmp_path: Path, cluster: WeaviateCluster, collection: str, via: int,
                     **overrides: object) -> Settings:
    """Sift configured as docs/deployment.md's "Several replicas" says (3 copies, QUORUM both ways),
    talking to node `via`; writes get 3 attempts of 10 s."""
    entry = cluster.nodes[via]
    values: dict[str, object] = dict(
        data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'sift.db'}",
        weaviate_url=entry.url, weaviate_api_key=SecretStr(cluster.api_key),
        weaviate=WeaviateSettings(grpc_url=f"127.0.0.1:{entry.ports.grpc}",
                                  collection=collection, replication_factor=3,
                                  read_consistency="QUORUM", write_consistency="QUORUM",
                                  insert_timeout_s=30),
        sync=SyncSettings(sync_on_start=False))
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def synced(tmp_path: Path, weaviate_cluster: WeaviateCluster, embedder: LocalEmbedder
                 ) -> AsyncIterator[tuple[App, WeaviateIndex, Path]]:
    """Sift on the node after the Raft leader (the test kills the leader)."""
    kb = tmp_path / "kb"
    for i in range(4):  # different lengths: a lost or resurrected document changes the count
        write(kb, f"doc{i}.md", article(f"Runbook {i}", paragraph(f"runbook{i}", 6 + 10 * i)))
    via = (weaviate_cluster.leader() + 1) % len(weaviate_cluster.nodes)
    app = App(cluster_settings(tmp_path, weaviate_cluster, unique_collection("Cluster"), via,
                               sources=[SourceSettings(name="kb", kind="folder", path=kb)]))
    app.__dict__["embedder"] = embedder
    app.database.upgrade()
    index = app.index()
    await index.connect()
    yield app, index, kb
    await index.drop()
    await index.close()
    app.database.dispose()


async def _object_ids(index: WeaviateIndex) -> set[str]:
    return {str(o.uuid) async for o in index._collection.iterator(return_properties=[])}


def _kill(cluster: WeaviateCluster, n: int) -> None:
    assert cluster.leader() == n  # Raft kept its leader since the test began
    node = cluster.nodes[n]
    os.kill(int(node.pid_file.read_text()), signal.SIGKILL)  # no goodbye to the cluster
    cluster.wait(lambda: node.exit_code() is not None, 20, f"node{n} did not die")


async def test_one_node_down_then_back(synced: tuple[App, WeaviateIndex, Path],
                                       weaviate_cluster: WeaviateCluster) -> None:
    app, index, kb = synced
    cluster, name = weaviate_cluster, index.config.collection
    down = cluster.leader()
    via, other = (down + 1) % 3, (down + 2) % 3
    runner = app.sync_runner(index)
    first = await runner.run("kb", full=True)
    assert first.counts.added == 4
    before = await _object_ids(index)
    config = await index._collection.config.get()
    assert config.replication_config.factor == 3
    for node in range(3):  # QUORUM returns once two copies are written; the third follows
        await asyncio.to_thread(
            cluster.wait, lambda node=node: cluster.holds(node, name, before) == before, 30,
            f"node{node} did not get every chunk of the first sync")

    _kill(cluster, down)
    try:
        hits = await index.search("runbook2 procedure", None, limit=5, alpha=0.0)
        assert hits and hits[0].chunk.title == "Runbook 2"  # questions are still answered
        write(kb, "doc1.md", article("Runbook 1", paragraph("rollback", 40)), age_s=0)
        write(kb, "doc9.md", article("Runbook 9", paragraph("runbook9", 3)), age_s=0)
        (kb / "doc3.md").unlink()
        second = await runner.run("kb", full=True)  # sync still writes, and deletes
        counts = second.counts
        assert (counts.added, counts.updated, counts.deleted, counts.failed) == (1, 1, 1, 0)
        after = await _object_ids(index)
        assert cluster.holds(other, name, after | before, via) == after
    finally:
        await asyncio.to_thread(cluster.nodes[down].start, 120)

    # Back: the node catches up with what it missed while dead (new and changed chunks;
    # deleted ones go).
    assert after != before
    await asyncio.to_thread(
        cluster.wait, lambda: cluster.holds(down, name, after | before, via) == after, 120,
        f"node{down} did not catch up")
    hits = await index.search("rollback procedure", None, limit=3, alpha=0.0)
    assert hits[0].chunk.doc_id.endswith("doc1.md")
