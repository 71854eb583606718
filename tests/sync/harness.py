"""Test harness for sync runs: a fixed knowledge folder, spies, failures, index snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import weaviate
from weaviate.classes.init import Auth

from rag.index import IndexConfig, WeaviateIndex
from rag.types import Chunk, Vector
from sync.chunk import ChunkingConfig
from sync.connectors.folder import FolderConnector
from sync.job import JobConfig, SyncJob
from sync.ports import ChunkIndex, SyncState
from tests.fakes.memory_index import MemoryIndex
from tests.sync.conftest import article, paragraph, write

SOURCE = "kb"
# Small chunks make multi-chunk documents and several embedding batches out of a few files.
CONFIG = JobConfig(chunking=ChunkingConfig(target_tokens=80, overlap_tokens=10, min_tokens=15),
                   embed_batch=8)


def fill(root: Path) -> None:
    """Six documents, one of them long, in each format the folder connector reads."""
    write(root, "hr/leave.md", article("Parental leave", "# Parental leave\n\n"
          + paragraph("leave", 3), doc_id="hr-leave", tags="[leave]"))
    write(root, "it/vpn.md", article("VPN", "## Install\n\n" + paragraph("vpn", 12)
          + "\n\n## Connect\n\n" + paragraph("connect", 12)
          + "\n\n```bash\nwg-quick up office\n```"))
    write(root, "it/printers.txt", "PRINTERS\n\n" + paragraph("printer", 4))
    write(root, "eng/deploy.md", article("Deploying", paragraph("deploy", 30)))
    write(root, "eng/rollback.md", article("Rolling back", paragraph("rollback", 5)))
    write(root, "product/pricing.html", "<html><head><title>Pricing</title></head><body>"
          f"<h1>Pricing</h1><p>{paragraph('pricing', 4)}</p></body></html>")


def job(connector_root: Path, index: ChunkIndex, embedder: Any, state: SyncState,
        config: JobConfig = CONFIG) -> SyncJob:
    return SyncJob(SOURCE, FolderConnector(connector_root), index, embedder, state, config)


@dataclass
class SpyIndex:
    """Delegates to a real index and records every write, so "nothing written" is checkable."""

    inner: Any
    writes: list[str] = field(default_factory=list)
    fail_on_upsert: int = 0  # raise on this upsert call (1-based); 0 never
    upserts: int = 0

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int:
        self.writes.append(f"upsert {len(chunks)}")
        self.upserts += 1
        if self.upserts == self.fail_on_upsert:
            raise RuntimeError("injected failure during upsert")
        return int(await self.inner.upsert(chunks, vectors))

    async def delete_document(self, source: str, doc_id: str, keep_hash: str = "") -> int:
        self.writes.append(f"delete {doc_id}")
        return int(await self.inner.delete_document(source, doc_id, keep_hash))

    async def delete_source(self, source: str) -> int:
        self.writes.append(f"delete source {source}")
        return int(await self.inner.delete_source(source))

    async def list_documents(self, source: str) -> dict[str, set[str]]:
        return dict(await self.inner.list_documents(source))

    async def count_by_source(self) -> dict[str, int]:
        return dict(await self.inner.count_by_source())

    async def chunk_ids(self, source: str, doc_id: str, content_hash: str) -> set[str]:
        return set(await self.inner.chunk_ids(source, doc_id, content_hash))


class FailingEmbedder:
    """Wraps an embedder and raises on its Nth call: a crash between batches."""

    def __init__(self, inner: Any, fail_on_call: int) -> None:
        self.inner, self.fail_on_call, self.calls = inner, fail_on_call, 0
        self.name, self.dimension = inner.name, inner.dimension

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("injected failure during embedding")
        return list(await self.inner.embed_documents(texts))

    async def embed_query(self, text: str) -> Vector:
        return list(await self.inner.embed_query(text))


Snapshot = dict[str, tuple[str, str, str, str]]


async def snapshot(index: Any) -> Snapshot:
    """chunk_id -> (doc_id, content_hash, section, text) of everything in the index."""
    if isinstance(index, SpyIndex):
        index = index.inner
    if isinstance(index, MemoryIndex):
        return {k: _row(c) for k, (c, _) in index.chunks.items()}
    assert isinstance(index, WeaviateIndex)
    return read_collection(index)


def _row(chunk: Chunk) -> tuple[str, str, str, str]:
    return chunk.doc_id, chunk.content_hash, chunk.section, chunk.text


def connect(config: IndexConfig) -> weaviate.WeaviateClient:
    """A client of the test's own, not Sift's: the test looks at the server, not our code."""
    http = config.http_url.rsplit(":", 1)
    grpc = config.grpc_url.rsplit(":", 1)
    return weaviate.connect_to_custom(
        http_host=http[0].split("//")[-1], http_port=int(http[1]), http_secure=False,
        grpc_host=grpc[0], grpc_port=int(grpc[1]), grpc_secure=False,
        auth_credentials=Auth.api_key(config.api_key) if config.api_key else None)


def read_collection(index: WeaviateIndex,
                    client: weaviate.WeaviateClient | None = None) -> Snapshot:
    """Read a collection through `client`, else through a client made for this read."""
    if client is not None:
        return _rows(client, index.config.collection)
    with connect(index.config) as made:
        return _rows(made, index.config.collection)


def _rows(client: weaviate.WeaviateClient, name: str) -> Snapshot:
    rows = {}
    for obj in client.collections.use(name).iterator(return_properties=[
            "chunk_id", "doc_id", "content_hash", "section", "text"]):
        p = obj.properties
        rows[str(p["chunk_id"])] = (str(p["doc_id"]), str(p["content_hash"]),
                                    str(p.get("section") or ""), str(p["text"]))
    return rows
