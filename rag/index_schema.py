"""The Weaviate collection layout for chunks, and conversion between `Chunk` and stored objects."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from weaviate.classes.config import (
    Configure,
    DataType,
    Property,
    Reconfigure,
    ReplicationDeletionStrategy,
    Tokenization,
    VectorDistances,
)

from rag.types import Chunk

SCHEMA_VERSION = 1
# Fixed namespace: the same chunk_id always maps to the same object, so re-imports replace.
CHUNK_NAMESPACE = uuid.UUID("6f1c2a7e-3d4b-5c6d-8e9f-0a1b2c3d4e5f")

# Word tokenization splits "rate-limit" and "db_creds" into their parts and lowercases them,
# which is what English technical prose wants; ids use exact (field) matching.
_WORD, _FIELD, _LOWER = Tokenization.WORD, Tokenization.FIELD, Tokenization.LOWERCASE


def _id_prop(name: str) -> Property:
    return Property(name=name, data_type=DataType.TEXT, tokenization=_FIELD,
                    index_searchable=False, index_filterable=True)


def _stored_prop(name: str, data_type: DataType) -> Property:
    return Property(name=name, data_type=data_type, index_searchable=False,
                    index_filterable=False)


def _prose_prop(name: str) -> Property:
    # Searched by BM25, never filtered on: without a filterable index of every word, Weaviate
    # used 9% less CPU to import the AWS pages' 29,645 chunks (scratch import, 4 alternating).
    return Property(name=name, data_type=DataType.TEXT, tokenization=_WORD,
                    index_searchable=True, index_filterable=False)


PROPERTIES = [
    _id_prop("chunk_id"),
    _id_prop("doc_id"),
    _id_prop("source"),
    _prose_prop("title"),
    _stored_prop("url", DataType.TEXT),
    _prose_prop("section"),
    _prose_prop("text"),
    Property(name="tags", data_type=DataType.TEXT_ARRAY, tokenization=_LOWER),
    Property(name="authors", data_type=DataType.TEXT_ARRAY, tokenization=_FIELD,
             index_searchable=False),
    Property(name="channels", data_type=DataType.TEXT_ARRAY, tokenization=_FIELD,
             index_searchable=False),
    _id_prop("doc_type"),
    _id_prop("subtype"),
    _id_prop("language"),
    Property(name="published_at", data_type=DataType.DATE),
    Property(name="updated_at", data_type=DataType.DATE),
    Property(name="access", data_type=DataType.TEXT_ARRAY, tokenization=_FIELD,
             index_searchable=False),
    _id_prop("content_hash"),
    Property(name="chunk_index", data_type=DataType.INT),
    _stored_prop("tokens", DataType.INT),
]

# What a search returns: the properties read after a search (grading, answering, citing,
# the access check, the Teams card's keywords). The client parses every returned property
# of every hit, the dates one by one with `strptime` (3% of `sift serve`'s interpreter time
# at 50 conversations, py-spy), so the rest (authors, channels, subtype, language, tokens
# and the dates, whose filters run inside Weaviate) stay in Weaviate.
RETURNED = ["chunk_id", "doc_id", "source", "title", "url", "section", "text", "tags",
            "doc_type", "access", "content_hash", "chunk_index"]


COMPRESSIONS = ("none", "rq8", "rq1")  # Weaviate's rotational quantization, 8 or 1 bits


@dataclass(frozen=True)
class VectorIndexSettings:
    """The HNSW graph and its compression. `ef` (-1: Weaviate's dynamic ef) can change on a
    live collection, and compression can be switched on later (never off); `ef_construction`
    and `max_connections` are fixed when the collection is created."""

    ef: int = -1
    ef_construction: int = 128
    max_connections: int = 32
    compression: str = "none"

    def hnsw(self) -> Any:
        return Configure.VectorIndex.hnsw(
            distance_metric=VectorDistances.COSINE, ef=self.ef,
            ef_construction=self.ef_construction, max_connections=self.max_connections,
            quantizer=quantizer(self.compression))


def quantizer(compression: str) -> Any:
    """What a new collection's index is compressed with; None leaves it as Weaviate's
    default (uncompressed unless its DEFAULT_QUANTIZATION says otherwise), so "none" is
    said explicitly."""
    if compression == "rq8":
        return Configure.VectorIndex.Quantizer.rq(bits=8)
    if compression == "rq1":
        return Configure.VectorIndex.Quantizer.rq(bits=1)
    return Configure.VectorIndex.Quantizer.none()


def collection_options(description: str, replication_factor: int = 1,
                       vectors: VectorIndexSettings | None = None) -> dict[str, Any]:
    vectors = vectors or VectorIndexSettings()
    return {
        "description": description,
        # Time-based resolution: a chunk deleted while a node was down (an old version the
        # sync replaced) stays deleted when that node comes back, instead of reappearing.
        "replication_config": Configure.replication(
            factor=replication_factor,
            deletion_strategy=ReplicationDeletionStrategy.TIME_BASED_RESOLUTION),
        "properties": PROPERTIES,
        "vector_config": Configure.Vectors.self_provided(
            vector_index_config=vectors.hnsw()),
        "inverted_index_config": Configure.inverted_index(bm25_b=0.75, bm25_k1=1.2),
    }


def describe(embedder: str, dimension: int) -> str:
    """The collection description records which vector space its vectors live in."""
    return json.dumps({"sift_schema": SCHEMA_VERSION, "embedder": embedder,
                       "dimension": dimension})


def read_description(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text or "")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def object_uuid(chunk_id: str) -> str:
    return str(uuid.uuid5(CHUNK_NAMESPACE, chunk_id))


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def to_properties(chunk: Chunk) -> dict[str, Any]:
    props: dict[str, Any] = {
        "chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "source": chunk.source,
        "title": chunk.title, "url": chunk.url, "section": chunk.section, "text": chunk.text,
        "tags": list(chunk.tags), "authors": list(chunk.authors),
        "channels": list(chunk.channels), "doc_type": chunk.doc_type,
        "subtype": chunk.subtype, "language": chunk.language,
        "access": list(chunk.access), "content_hash": chunk.content_hash,
        "chunk_index": chunk.chunk_index, "tokens": chunk.tokens,
    }
    for name in ("published_at", "updated_at"):
        value = _utc(getattr(chunk, name))
        if value is not None:
            props[name] = value
    return props


def _tuple(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if value else ()


def from_properties(props: dict[str, Any]) -> Chunk:
    return Chunk(
        chunk_id=str(props.get("chunk_id", "")),
        doc_id=str(props.get("doc_id", "")),
        source=str(props.get("source", "")),
        title=str(props.get("title") or ""),
        text=str(props.get("text") or ""),
        url=str(props.get("url") or ""),
        section=str(props.get("section") or ""),
        tags=_tuple(props.get("tags")),
        authors=_tuple(props.get("authors")),
        channels=_tuple(props.get("channels")),
        doc_type=str(props.get("doc_type") or ""),
        subtype=str(props.get("subtype") or ""),
        language=str(props.get("language") or ""),
        published_at=props.get("published_at"),
        updated_at=props.get("updated_at"),
        access=_tuple(props.get("access")),  # none stored: nobody
        content_hash=str(props.get("content_hash") or ""),
        chunk_index=int(props.get("chunk_index") or 0),
        tokens=int(props.get("tokens") or 0),
    )


def vector_index_of(config: Any) -> Any:
    """The HNSW settings of a collection's one vector (named "default", or the legacy
    unnamed one); None when it has neither."""
    named = getattr(config, "vector_config", None) or {}
    if named:
        return next(iter(named.values())).vector_index_config
    return getattr(config, "vector_index_config", None)


def compression_of(index: Any) -> str:
    """"rq8", "rq1", another quantizer's class name ("_PQConfig"), or "none"."""
    found = getattr(index, "quantizer", None)
    if found is None:
        return "none"
    if type(found).__name__ == "_RQConfig":
        return f"rq{found.bits}"
    return type(found).__name__


def reconfigured_quantizer(compression: str) -> Any:
    """Compression switched on for a collection that had none."""
    return Reconfigure.VectorIndex.Quantizer.rq(bits=1 if compression == "rq1" else 8)
