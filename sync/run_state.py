"""What one sync run knows and has done so far (the job's working state)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rag.types import Chunk
from sync.connectors.base import SourceDocument
from sync.ports import DocumentState
from sync.report import Tally
from sync.write_behind import WriteBehind


@dataclass
class Pending:
    doc: SourceDocument
    digest: str
    chunks: list[Chunk]  # those to embed and write (a resumed document: the rest of them)
    kind: str  # "added" or "updated"
    chunk_count: int = -1  # the document's chunks in all; -1: len(chunks)

    @property
    def total_chunks(self) -> int:
        return len(self.chunks) if self.chunk_count < 0 else self.chunk_count


@dataclass
class RunState:
    """What one run knows and has done so far."""

    full: bool
    dry_run: bool
    # Every document's record, read by a full run; a plain run looks up the few it lists.
    known: Mapping[str, DocumentState] = field(default_factory=dict)
    indexed: dict[str, set[str]] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)
    errors: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    pending: list[Pending] = field(default_factory=list)
    embedded: int = 0
    warnings: list[str] = field(default_factory=list)
    unknown_groups: dict[str, list[str]] = field(default_factory=dict)  # group -> doc ids
    cursor: str | None = None  # the platform's change cursor, stored if the run succeeds
    listed_all: bool = False  # the connector listed every current document this run
    writes: WriteBehind = field(default_factory=WriteBehind)  # the batch being written

    @property
    def pending_chunks(self) -> int:
        return sum(len(p.chunks) for p in self.pending)
