"""The evaluation corpus in its own collection, built by the sync job and reused while unchanged."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from evaluation.dataset import CorpusDoc, corpus_hash
from rag import index_schema
from rag.index import WeaviateIndex
from rag.ports import Embedder
from sync.chunk import ChunkingConfig
from sync.connectors.base import Fetched, SourceDocument
from sync.job import JobConfig, SyncJob
from sync.ports import RunCounts
from sync.prepare import content_hash, to_chunks
from sync.report import Progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexInfo:
    """The collection a run used, and whether it was built now or reused."""

    collection: str
    reused: bool
    seconds: float  # wall time of this run's index step (the check alone, when reused)
    documents: int
    chunks: int
    build_seconds: float | None = None  # how long the build took (now, or when it was made)
    embedder: str = ""
    chunking: str = ""
    phases: Mapping[str, float] | None = None  # build only: seconds per sync phase
    resumed: int = 0  # documents an interrupted build had already indexed (kept, not redone)


def source_document(doc: CorpusDoc) -> SourceDocument:
    return SourceDocument(doc_id=doc.doc_id, title=doc.title or doc.doc_id, body=doc.text,
                          url=doc.url)


class CorpusConnector:
    """An in-memory source over the evaluation corpus, fed to the ordinary sync job."""

    cheap_ids = True

    def __init__(self, corpus: Sequence[CorpusDoc]) -> None:
        self._corpus = corpus

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        for doc in self._corpus:
            yield source_document(doc)

    async def list_ids(self) -> set[str]:
        return {d.doc_id for d in self._corpus}


@dataclass(frozen=True)
class _Doc:
    doc_id: str
    content_hash: str
    chunk_count: int
    status: str
    restricted: bool = False
    warning: str = ""


class BuildState:
    """A throwaway SyncState: each build is a full pass, fresh or resuming an interrupted one
    (then it starts with the documents already complete in the collection)."""

    def __init__(self) -> None:
        self._docs: dict[str, _Doc] = {}

    def documents(self, source: str) -> Mapping[str, _Doc]:
        return dict(self._docs)

    def document(self, source: str, doc_id: str) -> _Doc | None:
        return self._docs.get(doc_id)

    def has_documents(self, source: str) -> bool:
        return bool(self._docs)

    def document_ids(self, source: str, *, after: str = "", limit: int = 5000) -> list[str]:
        return sorted(d for d in self._docs if d > after)[:limit]

    def record_document(self, source: str, doc_id: str, *, content_hash: str,
                        chunk_count: int, updated_at: datetime | None, status: str = "ok",
                        error: str = "", restricted: bool = False, warning: str = "") -> None:
        self._docs[doc_id] = _Doc(doc_id, content_hash, chunk_count, status, restricted,
                                  warning)

    def forget_document(self, source: str, doc_id: str) -> None:
        self._docs.pop(doc_id, None)

    def forget_source(self, source: str) -> None:
        self._docs.clear()

    def synced_sources(self) -> set[str]:
        return set()  # an evaluation collection holds one corpus and is never pruned

    def start_run(self, source: str, *, full: bool) -> int:
        return 1

    def finish_run(self, run_id: int, counts: RunCounts, errors: Sequence[str], *,
                   status: str, cursor: str | None = None) -> None:
        return None

    def last_success(self, source: str) -> datetime | None:
        return None

    def last_cursor(self, source: str) -> str | None:
        return None

    def last_started(self, source: str, *, full: bool = False) -> datetime | None:
        return None


def fingerprint(corpus: Sequence[CorpusDoc], chunking: ChunkingConfig, embedder: str,
                dimension: int) -> str:
    """What the collection's content depends on: corpus, chunking, vector space, schema."""
    parts = [corpus_hash(tuple(corpus)), chunking.fingerprint(), embedder, str(dimension),
             f"schema{index_schema.SCHEMA_VERSION}"]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def collection_name(slug: str, digest: str) -> str:
    return f"Eval_{slug[:40]}_{digest[:10]}"


class EvalIndex:
    """Builds the collection through SyncJob, or reuses it when its marker and counts agree.

    A collection without a matching marker is an interrupted (or damaged) build: the build
    resumes, keeping each document whose chunks of the current version are all there.
    """

    def __init__(self, index: WeaviateIndex, embedder: Embedder, source: str,
                 job: JobConfig, marker: Path) -> None:
        self._index = index
        self._embedder = embedder
        self._source = source
        self._job = job
        self._marker = marker

    async def prepare(self, corpus: Sequence[CorpusDoc], progress: Progress,
                      rebuild: bool = False) -> IndexInfo:
        started = time.perf_counter()
        await self._index.connect(ensure=False)
        if not rebuild:
            kept = await self._reusable()
            if kept is not None:
                return IndexInfo(**{**asdict(kept), "reused": True,
                                    "seconds": round(time.perf_counter() - started, 2)})
        state = BuildState()
        if await self._index.collection_exists():
            if rebuild:
                log.info("dropping %s to rebuild it", self._index.config.collection)
                await self._index.drop()
            else:  # an interrupted build: an hour of embedding is not thrown away
                state = await self._complete(corpus)
        await self._index.close()  # reconnect with `ensure`: creates the collection if needed
        await self._index.connect(ensure=True)
        return await self._build(corpus, progress, started, state)

    async def _complete(self, corpus: Sequence[CorpusDoc]) -> BuildState:
        """The documents whose every chunk of the current version is already indexed."""
        hashes = await self._index.list_documents(self._source)
        counts = await self._index.count_by_document(self._source)
        state = BuildState()
        for doc in corpus:
            found = hashes.get(doc.doc_id)
            if not found:
                continue
            fetched = source_document(doc)
            digest = content_hash(fetched, self._job.chunking)
            chunks = len(to_chunks(self._source, fetched, digest, self._job.chunking))
            if found == {digest} and counts.get(doc.doc_id) == chunks:
                state.record_document(self._source, doc.doc_id, content_hash=digest,
                                      chunk_count=chunks, updated_at=None)
        log.info("resuming the build of %s: %d of %d documents already indexed",
                 self._index.config.collection, len(state.documents(self._source)), len(corpus))
        return state

    async def _reusable(self) -> IndexInfo | None:
        if not await self._index.collection_exists() or not self._marker.is_file():
            return None
        try:
            recorded = IndexInfo(**json.loads(self._marker.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            return None
        per_doc = await self._index.count_by_document(self._source)
        if recorded.collection != self._index.config.collection or \
                (len(per_doc), sum(per_doc.values())) != (recorded.documents, recorded.chunks):
            log.info("collection %s differs from its build record; completing it",
                     self._index.config.collection)
            return None
        return recorded

    async def _build(self, corpus: Sequence[CorpusDoc], progress: Progress,
                     started: float, state: BuildState) -> IndexInfo:
        resumed = len(state.documents(self._source))
        job = SyncJob(self._source, CorpusConnector(corpus), self._index, self._embedder,
                      state, self._job, progress)
        summary = await job.run(full=True)
        per_doc = await self._index.count_by_document(self._source)
        seconds = round(time.perf_counter() - started, 2)
        info = IndexInfo(self._index.config.collection, False, seconds, len(per_doc),
                         sum(per_doc.values()), seconds, self._embedder.name,
                         self._job.chunking.fingerprint(),
                         {k: round(v, 2) for k, v in summary.phases.items()}, resumed)
        if summary.counts.failed:
            log.warning("%d document(s) could not be indexed: %s", summary.counts.failed,
                        "; ".join(summary.errors[:3]))
        self._marker.parent.mkdir(parents=True, exist_ok=True)
        self._marker.write_text(json.dumps(asdict(info), indent=2), encoding="utf-8")
        return info
