"""From a source document to its content hash and its chunks, ready to embed (pure)."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import datetime

from rag.language import of_document
from rag.types import Chunk
from sync.chunk import ChunkingConfig, chunk_markdown, embedding_text
from sync.connectors.base import SourceDocument


def normalise(body: str) -> str:
    """Line endings, Unicode form and trailing spaces must not count as a content change."""
    text = unicodedata.normalize("NFC", body.replace("\r\n", "\n").replace("\r", "\n"))
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value is not None else ""


def content_hash(doc: SourceDocument, config: ChunkingConfig) -> str:
    """sha256 of the normalised body, the indexed metadata and the chunking settings."""
    fields = [config.fingerprint(), normalise(doc.body), doc.title.strip(), doc.url,
              list(doc.tags), list(doc.authors), list(doc.channels), doc.doc_type,
              doc.subtype, doc.language, _iso(doc.published_at), _iso(doc.updated_at),
              list(doc.access)]
    encoded = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def chunk_id(source: str, doc_id: str, index: int) -> str:
    # Positional and deterministic: re-syncing a document overwrites its chunks in place.
    return f"{source}:{doc_id}:{index}"


def to_chunks(source: str, doc: SourceDocument, digest: str,
              config: ChunkingConfig) -> list[Chunk]:
    title = doc.title.strip()
    body = normalise(doc.body)
    language = of_document(doc.language, body)  # stored per chunk: the corpus's language
    return [
        Chunk(chunk_id=chunk_id(source, doc.doc_id, piece.index), doc_id=doc.doc_id,
              source=source, title=title, text=piece.text, url=doc.url, section=piece.section,
              tags=doc.tags, authors=doc.authors, channels=doc.channels,
              doc_type=doc.doc_type, subtype=doc.subtype, language=language,
              published_at=doc.published_at, updated_at=doc.updated_at,
              access=doc.access, content_hash=digest,
              chunk_index=piece.index, tokens=piece.tokens)
        for piece in chunk_markdown(body, config, title)
    ]


def text_to_embed(chunk: Chunk) -> str:
    return embedding_text(chunk.title, chunk.section, chunk.text)
