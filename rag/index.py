"""The hybrid index over Weaviate (async client): ensure, upsert, delete, list, count, search."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import grpc
import httpx
import weaviate
from weaviate.classes.aggregate import GroupByAggregate
from weaviate.classes.config import ConsistencyLevel, Reconfigure
from weaviate.classes.data import DataObject
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.classes.query import Diversity as WeaviateDiversity
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery
from weaviate.exceptions import WeaviateBaseError

from rag import index_schema as schema
from rag.embed import LOCAL_NAME, local_backend_for
from rag.errors import ConfigError, RetrievalError
from rag.ports import Diversity
from rag.types import Chunk, SearchFilters, SearchHit, Vector

log = logging.getLogger(__name__)
T = TypeVar("T")

INSERT_BATCH = 200
# Weaviate's default cap on one query's objects (QUERY_MAXIMUM_RESULTS): a document of more
# chunks than this resumes from what the first page lists, and embeds the rest again.
MAX_DOCUMENT_CHUNKS = 10_000
INSERT_ATTEMPTS = 3
INSERT_RETRY_PAUSE_S = 1.0
# In a cluster, the write in flight when the Raft leader dies can hang until cancelled (the
# node keeps dialling the dead leader) while the next one succeeds: a replicated collection's
# writes get this many attempts, each a share of insert_timeout_s (all idempotent: objects
# have deterministic ids, deletes match by filter).
WRITE_ATTEMPTS = 3
# How a write the cluster could not place reads (a replica down or its connection closing),
# as opposed to a rejected object (a wrong vector length), which no retry fixes.
TRANSIENT = ("rpc error", "connection", "replica", "deadline", "timeout")
# What a down or unreachable server surfaces as: the client wraps most failures in
# WeaviateBaseError, but raw gRPC, HTTP and socket errors can escape it.
TRANSPORT_ERRORS = (WeaviateBaseError, grpc.RpcError, httpx.HTTPError, OSError)


@dataclass(frozen=True)
class IndexConfig:
    http_url: str
    grpc_url: str = ""  # "host:port"; default: the HTTP host with port 50051
    api_key: str | None = None
    collection: str = "SiftChunks"
    connect_timeout_s: float = 5.0
    query_timeout_s: float = 30.0
    insert_timeout_s: float = 120.0
    # A search still running after this long gets a readiness check, to fail fast on a dead
    # server; well above a healthy search's time under load (p95 ~120 ms on 2 busy cores).
    readiness_grace_s: float = 0.25
    title_boost: float = 2.0
    replication_factor: int = 1  # used when the collection is created
    vectors: schema.VectorIndexSettings = field(default_factory=schema.VectorIndexSettings)
    read_consistency: str = "QUORUM"  # ONE, QUORUM or ALL of the replicas
    write_consistency: str = "QUORUM"


def _endpoints(config: IndexConfig) -> dict[str, Any]:
    http = urlsplit(config.http_url if "://" in config.http_url else f"http://{config.http_url}")
    secure = http.scheme == "https"
    grpc = urlsplit("//" + config.grpc_url.split("://")[-1]) if config.grpc_url else None
    return {
        "http_host": http.hostname or "127.0.0.1",
        "http_port": http.port or (443 if secure else 80),
        "http_secure": secure,
        "grpc_host": (grpc.hostname if grpc else None) or http.hostname or "127.0.0.1",
        "grpc_port": (grpc.port if grpc else None) or (443 if secure and grpc else 50051),
        "grpc_secure": secure,
    }


def build_filter(filters: SearchFilters | None) -> Any:
    if filters is None:
        return None
    parts = []
    if filters.access is not None:
        parts.append(Filter.by_property("access").contains_any(list(filters.access) or [""]))
    if filters.sources:
        parts.append(Filter.by_property("source").contains_any(list(filters.sources)))
    if filters.doc_types:
        parts.append(Filter.by_property("doc_type").contains_any(list(filters.doc_types)))
    if filters.tags:  # tags are stored lowercased
        parts.append(Filter.by_property("tags").contains_any([t.lower() for t in filters.tags]))
    if filters.exclude_docs:
        parts.append(Filter.by_property("doc_id").contains_none(list(filters.exclude_docs)))
    return Filter.all_of(parts) if parts else None


class WeaviateIndex:
    """One collection of chunks. Call `connect()` inside the event loop that will use it."""

    def __init__(self, config: IndexConfig, embedder: str, dimension: int) -> None:
        self.config = config
        self.embedder = embedder
        self.dimension = dimension
        self._client: weaviate.WeaviateAsyncClient | None = None

    @property
    def where(self) -> str:
        return f"Weaviate at {self.config.http_url}"

    def _error(self, action: str, exc: BaseException) -> RetrievalError:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return RetrievalError(f"{self.where} failed to {action}: {detail}")

    async def _run(self, action: str, call: Awaitable[T], timeout_s: float) -> T:
        try:
            return await asyncio.wait_for(call, timeout_s)
        except TimeoutError as exc:
            raise RetrievalError(f"{self.where} did not {action} within {timeout_s:.0f}s") from exc
        except TRANSPORT_ERRORS as exc:
            raise self._error(action, exc) from exc

    async def _write(self, action: str, call: Callable[[], Awaitable[T]]) -> T:
        """A write; in a replicated collection one that stalls is cancelled and sent again."""
        attempts = WRITE_ATTEMPTS if self.config.replication_factor > 1 else 1
        each_s = self.config.insert_timeout_s / attempts
        for attempt in range(1, attempts):
            try:
                return await asyncio.wait_for(call(), each_s)
            except TimeoutError:
                log.warning("%s did not %s within %.0fs; sending it again (%d of %d)",
                            self.where, action, each_s, attempt + 1, attempts)
            except TRANSPORT_ERRORS as exc:
                raise self._error(action, exc) from exc
        return await self._run(action, call(), each_s)

    @property
    def _collection(self) -> Any:
        """The collection for reads, at the configured read consistency."""
        return self._handle(self.config.read_consistency)

    @property
    def _writes(self) -> Any:
        return self._handle(self.config.write_consistency)

    def _handle(self, consistency: str) -> Any:
        if self._client is None:
            raise RetrievalError(f"{self.where}: the index is not connected (call connect())")
        return self._client.collections.use(self.config.collection).with_consistency_level(
            ConsistencyLevel(consistency))

    async def connect(self, *, ensure: bool = True) -> None:
        """Connect; with `ensure`, create the collection or check it matches the embedder."""
        c = self.config
        timeout = Timeout(init=c.connect_timeout_s, query=c.query_timeout_s,
                          insert=c.insert_timeout_s)
        client = weaviate.use_async_with_custom(
            **_endpoints(c),
            additional_config=AdditionalConfig(timeout=timeout),
            auth_credentials=Auth.api_key(c.api_key) if c.api_key else None,
            skip_init_checks=True,
        )
        try:
            await asyncio.wait_for(client.connect(), c.connect_timeout_s + 5)
        except (WeaviateBaseError, TimeoutError, OSError) as exc:
            await client.close()
            raise RetrievalError(
                f"Could not connect to {self.where} (gRPC {_endpoints(c)['grpc_host']}:"
                f"{_endpoints(c)['grpc_port']}): {str(exc).splitlines()[0] if str(exc) else exc!r}"
            ) from exc
        self._client = client
        if ensure:
            await self._ensure_collection()

    async def collection_exists(self) -> bool:
        assert self._client is not None
        return bool(await self._run("check the collection",
                                    self._client.collections.exists(self.config.collection),
                                    self.config.query_timeout_s))

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _ensure_collection(self) -> None:
        assert self._client is not None
        name = self.config.collection
        if not await self.collection_exists():
            options = schema.collection_options(schema.describe(self.embedder, self.dimension),
                                                self.config.replication_factor,
                                                self.config.vectors)
            await self._run("create the collection",
                            self._client.collections.create(name, **options),
                            self.config.insert_timeout_s)
            log.info("created Weaviate collection %s for %s", name, self.embedder)
            return
        config = await self._run("read the collection", self._collection.config.get(),
                                 self.config.query_timeout_s)
        stored = schema.read_description(config.description)
        if (stored.get("embedder"), stored.get("dimension")) != (self.embedder, self.dimension):
            # An index built by another backend of the local model (the default was `openvino`
            # before it became `openvino-int8`) can be kept by naming that backend.
            keep = (local_backend_for(str(stored.get("embedder")))
                    if self.embedder.startswith(LOCAL_NAME) else None)
            raise ConfigError(
                f"Collection {name} holds vectors from {stored.get('embedder')} "
                f"({stored.get('dimension')} dims), not {self.embedder} ({self.dimension}).",
                user_message=f"The index '{name}' was built with a different embedder "
                f"({stored.get('embedder')}, {stored.get('dimension')} dims) than the one "
                f"configured ({self.embedder}, {self.dimension} dims): re-sync with "
                "`sift sync --rebuild`" + (f", or set SIFT_EMBEDDING__BACKEND={keep} to keep "
                                           "answering from it." if keep else "."),
            )
        factor = config.replication_config.factor
        if factor != self.config.replication_factor:  # fixed at creation; say so, keep going
            log.warning("collection %s keeps %d copies of each chunk, not the %d configured "
                        "(SIFT_WEAVIATE__REPLICATION_FACTOR applies to a new collection)",
                        name, factor, self.config.replication_factor)
        await self._follow_vector_settings(config)

    async def _follow_vector_settings(self, config: Any) -> None:
        """What can change on a live collection follows the settings (ef; compression from
        none to on); what cannot is said once, naming the setting."""
        want, name = self.config.vectors, self.config.collection
        index = schema.vector_index_of(config)
        if index is None:
            return
        update: dict[str, Any] = {}
        if index.ef != want.ef:
            update["ef"] = want.ef
        have = schema.compression_of(index)
        if have != want.compression:
            if have == "none":
                update["quantizer"] = schema.reconfigured_quantizer(want.compression)
            else:
                log.warning("collection %s is compressed (%s) and Weaviate cannot undo that; "
                            "SIFT_WEAVIATE__COMPRESSION=%s applies to a new collection "
                            "(sift sync --rebuild)", name, have, want.compression)
        for setting in ("ef_construction", "max_connections"):
            if getattr(index, setting) != getattr(want, setting):
                log.warning("collection %s was built with %s=%s, not %s: "
                            "SIFT_WEAVIATE__%s applies to a new collection "
                            "(sift sync --rebuild)", name, setting, getattr(index, setting),
                            getattr(want, setting), setting.upper())
        if update:
            await self._run("update the vector index", self._collection.config.update(
                vector_config=Reconfigure.Vectors.update(
                    vector_index_config=Reconfigure.VectorIndex.hnsw(**update))),
                self.config.insert_timeout_s)
            log.info("collection %s: vector index now %s", name,
                     ", ".join(f"{k}={want.compression if k == 'quantizer' else v}"
                               for k, v in update.items()))

    async def drop(self) -> None:
        """Delete the whole collection (used to rebuild after an embedder change)."""
        if self._client is None:
            raise RetrievalError(f"{self.where}: the index is not connected")
        await self._run("delete the collection",
                        self._client.collections.delete(self.config.collection),
                        self.config.insert_timeout_s)

    async def backup(self, backup_id: str) -> str:
        """Back the collection up through Weaviate's filesystem module (into the server's
        BACKUP_FILESYSTEM_PATH); the path it wrote. RetrievalError says why it could not."""
        return await self._backup("back up the collection", backup_id, restore=False)

    async def restore(self, backup_id: str) -> str:
        """Restore the collection from that backup into this server (which must not hold
        the collection yet)."""
        return await self._backup("restore the collection", backup_id, restore=True)

    async def _backup(self, action: str, backup_id: str, *, restore: bool) -> str:
        from weaviate.backup.backup import BackupStatus, BackupStorage

        if self._client is None:
            raise RetrievalError(f"{self.where}: the index is not connected")
        run = self._client.backup.restore if restore else self._client.backup.create
        done = await self._run(action, run(
            backup_id=backup_id, backend=BackupStorage.FILESYSTEM,
            include_collections=[self.config.collection], wait_for_completion=True),
            self.config.insert_timeout_s)
        if done.status is not BackupStatus.SUCCESS:
            raise RetrievalError(f"{self.where} could not {action} ({backup_id}): "
                                 f"{done.status.value} {done.error or ''}".strip())
        return str(done.path or backup_id)

    async def is_ready(self) -> bool:
        if self._client is None:
            return False
        try:
            return bool(await asyncio.wait_for(self._client.is_ready(),
                                               self.config.connect_timeout_s))
        except (WeaviateBaseError, TimeoutError, OSError, TypeError):
            return False

    async def server_version(self) -> str:
        assert self._client is not None
        meta = await self._run("read its version", self._client.get_meta(),
                               self.config.query_timeout_s)
        return str(meta.get("version", ""))

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int:
        """Insert or replace chunks by their deterministic ids; raise if any object fails."""
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        written = 0
        for start in range(0, len(chunks), INSERT_BATCH):
            part = range(start, min(start + INSERT_BATCH, len(chunks)))
            objects = {i: DataObject(properties=schema.to_properties(chunks[i]),
                                     uuid=schema.object_uuid(chunks[i].chunk_id),
                                     vector=list(vectors[i])) for i in part}
            failed = await self._insert(objects)
            if failed:
                first = sorted(failed.items())[:3]
                detail = "; ".join(f"{chunks[i].chunk_id}: {message}" for i, message in first)
                raise RetrievalError(
                    f"{self.where} rejected {len(failed)} of {len(objects)} chunks: {detail}")
            written += len(objects)
        return written

    async def _insert(self, objects: dict[int, DataObject[Any, Any]]) -> dict[int, str]:
        """Write the objects; those that failed for want of a replica are sent again, twice at
        most: in a cluster, a node that has just died fails the writes in flight to it, and a
        retry goes to the replicas still up. Returns what still failed (index -> error)."""
        pending, failed = dict(objects), {}
        for attempt in range(INSERT_ATTEMPTS):
            keys = list(pending)
            result = await self._write("write chunks", partial(
                self._writes.data.insert_many, list(pending.values())))
            failed = {keys[n]: error.message for n, error in result.errors.items()}
            if not failed or attempt == INSERT_ATTEMPTS - 1 or not all(
                    any(sign in m for sign in TRANSIENT) for m in failed.values()):
                break
            log.warning("%s refused %d chunks (%s); sending them again", self.where,
                        len(failed), next(iter(failed.values())))
            pending = {i: pending[i] for i in failed}
            await asyncio.sleep(INSERT_RETRY_PAUSE_S * (attempt + 1))
        return failed

    async def _delete_where(self, where: Any, action: str) -> int:
        deleted = 0
        while True:  # the server deletes at most QUERY_MAXIMUM_RESULTS objects per call
            result = await self._write(action, partial(self._writes.data.delete_many,
                                                       where=where))
            if result.failed:
                raise RetrievalError(f"{self.where} failed to {action}: "
                                     f"{result.failed} objects could not be deleted")
            deleted += result.successful
            if result.matches == 0 or result.successful == 0:
                return deleted

    async def delete_document(self, source: str, doc_id: str, keep_hash: str = "") -> int:
        """Delete a document's chunks; with `keep_hash`, only those of other (older) versions."""
        where = (Filter.by_property("source").equal(source)
                 & Filter.by_property("doc_id").equal(doc_id))
        if keep_hash:
            where = where & Filter.by_property("content_hash").not_equal(keep_hash)
        return await self._delete_where(where, f"delete chunks of {source}/{doc_id}")

    async def delete_source(self, source: str) -> int:
        return await self._delete_where(Filter.by_property("source").equal(source),
                                        f"delete the chunks of source {source}")

    async def list_documents(self, source: str) -> dict[str, set[str]]:
        """doc_id -> content hashes present in the index for one source."""
        found: dict[str, set[str]] = {}
        limit = self.config.query_timeout_s
        try:
            # The deadline moves with each object: a big index takes many pages, but a dead
            # server must not keep the gRPC client retrying for a minute.
            async with asyncio.timeout(limit) as deadline:
                async for obj in self._collection.iterator(
                    return_properties=["source", "doc_id", "content_hash"], cache_size=1000
                ):
                    deadline.reschedule(asyncio.get_running_loop().time() + limit)
                    props = obj.properties
                    if props.get("source") == source:
                        found.setdefault(str(props["doc_id"]), set()).add(
                            str(props.get("content_hash", "")))
        except TimeoutError as exc:
            raise RetrievalError(
                f"{self.where} did not list documents (no reply within {limit:.0f}s)") from exc
        except TRANSPORT_ERRORS as exc:
            raise self._error("list documents", exc) from exc
        return found

    async def chunk_ids(self, source: str, doc_id: str, content_hash: str) -> set[str]:
        """The ids of a document version's chunks already in the index: what a run that was
        stopped half-way through a long document wrote before it stopped."""
        where = (Filter.by_property("source").equal(source)
                 & Filter.by_property("doc_id").equal(doc_id)
                 & Filter.by_property("content_hash").equal(content_hash))
        result = await self._run(
            f"list the chunks of {source}/{doc_id}",
            self._collection.query.fetch_objects(filters=where, limit=MAX_DOCUMENT_CHUNKS,
                                                 return_properties=["chunk_id"]),
            self.config.query_timeout_s)
        return {str(o.properties.get("chunk_id", "")) for o in result.objects}

    async def document_chunks(self, filters: SearchFilters, *, doc_id: str = "",
                              url: str = "") -> list[Chunk]:
        """Every chunk of one document (by id, else by URL) that `filters` let through, in
        reading order: a reader sees a whole document only where a search would find it."""
        named = Filter.by_property("doc_id").equal(doc_id) if doc_id else \
            Filter.by_property("url").equal(url)
        scope = build_filter(filters)
        result = await self._run(
            f"read document {doc_id or url}",
            self._collection.query.fetch_objects(
                filters=named & scope if scope is not None else named,
                limit=MAX_DOCUMENT_CHUNKS, return_properties=[*schema.RETURNED, "updated_at"]),
            self.config.query_timeout_s)
        chunks = [schema.from_properties(dict(o.properties)) for o in result.objects]
        first = min((c.doc_id for c in chunks), default="")  # one URL, two documents: one
        return sorted((c for c in chunks if c.doc_id == first), key=lambda c: c.chunk_index)

    async def updated_times(self, doc_ids: Sequence[str]) -> dict[str, datetime]:
        """When each document was last changed at its platform (search hits leave the dates
        in Weaviate: parsing them cost every answer; a tool's search asks for them apart)."""
        if not doc_ids:
            return {}
        where = (Filter.by_property("doc_id").contains_any(list(doc_ids))
                 & Filter.by_property("chunk_index").equal(0))
        result = await self._run(
            "read the documents' dates", self._collection.query.fetch_objects(
                filters=where, limit=len(doc_ids) * 4,
                return_properties=["doc_id", "updated_at"]), self.config.query_timeout_s)
        return {str(o.properties["doc_id"]): o.properties["updated_at"] for o in result.objects
                if isinstance(o.properties.get("updated_at"), datetime)}

    async def count(self, source: str | None = None) -> int:
        where = Filter.by_property("source").equal(source) if source else None
        result = await self._run(
            "count objects", self._collection.aggregate.over_all(total_count=True, filters=where),
            self.config.query_timeout_s)
        return int(result.total_count or 0)

    async def count_by_source(self) -> dict[str, int]:
        """Chunks per source name, for every source the index holds."""
        result = await self._run(
            "count chunks per source",
            self._collection.aggregate.over_all(
                group_by=GroupByAggregate(prop="source", limit=10_000), total_count=True),
            self.config.query_timeout_s)
        return {str(g.grouped_by.value): int(g.total_count or 0) for g in result.groups}

    async def count_by_language(self) -> dict[str, int]:
        """Chunks per detected language ("" for those synced before languages were stored)."""
        result = await self._run(
            "count chunks per language",
            self._collection.aggregate.over_all(
                group_by=GroupByAggregate(prop="language", limit=1_000), total_count=True),
            self.config.query_timeout_s)
        return {str(g.grouped_by.value): int(g.total_count or 0) for g in result.groups}

    async def count_by_document(self, source: str) -> dict[str, int]:
        result = await self._run(
            "count chunks per document",
            self._collection.aggregate.over_all(
                filters=Filter.by_property("source").equal(source),
                group_by=GroupByAggregate(prop="doc_id", limit=1_000_000), total_count=True),
            self.config.query_timeout_s)
        return {str(g.grouped_by.value): int(g.total_count or 0) for g in result.groups}

    async def search(
        self,
        query: str,
        vector: Vector | None,
        *,
        limit: int = 20,
        alpha: float = 0.5,
        diversity: Diversity | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Hybrid search (relative-score fusion); alpha 0 is BM25 only, 1 is vectors only."""
        if self._client is None:  # e.g. the server was down when Sift started
            raise RetrievalError(f"{self.where} is not reachable")
        fetch = limit * 2 if diversity else limit  # MMR picks `limit` out of a wider pool
        boost = f"^{self.config.title_boost:g}"
        request = self._collection.query.hybrid(
            query=query,
            vector=list(vector) if vector is not None else None,
            alpha=alpha,
            limit=fetch,
            fusion_type=HybridFusion.RELATIVE_SCORE,
            query_properties=[f"title{boost}", "section", "text", "tags"],
            filters=build_filter(filters),
            diversity_selection=(WeaviateDiversity.mmr(limit=limit, balance=diversity.balance)
                                 if diversity else None),
            return_metadata=MetadataQuery(score=True),
            return_properties=schema.RETURNED,
        )
        searching = asyncio.ensure_future(self._run("search", request, self.config.query_timeout_s))
        # Whatever ends this call, the query's own outcome is consumed, never left to warn.
        searching.add_done_callback(lambda task: task.cancelled() or task.exception())
        try:
            # gRPC would retry a dead server for a minute, so a query still running after a
            # short grace gets a readiness check (HTTP) beside it. Not before every query: that
            # request cost each answer more of the interpreter than the search itself.
            done, _ = await asyncio.wait({searching}, timeout=self.config.readiness_grace_s)
            if not done and not await self.is_ready():
                raise RetrievalError(f"{self.where} is not reachable", unreachable=True)
            response = await searching
        except RetrievalError as exc:
            # A failed query on a server that is not ready is the server's absence (worth
            # waiting for); on a ready one, the query itself was refused.
            if exc.unreachable or await self.is_ready():
                raise
            raise RetrievalError(f"{exc} (and the server is not ready)",
                                 unreachable=True) from exc
        finally:
            searching.cancel()  # no-op once it is done; stops the retries of a dead server
        return [SearchHit(schema.from_properties(dict(o.properties)), float(o.metadata.score or 0))
                for o in response.objects]
