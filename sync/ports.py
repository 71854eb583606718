"""What the sync job needs from the index and from storage (satisfied structurally)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from rag.types import Chunk, Vector

if TYPE_CHECKING:
    from sync.report import SyncSummary  # which imports this module's RunCounts


class ChunkIndex(Protocol):
    """The writing side of the index (WeaviateIndex and the test MemoryIndex satisfy it)."""

    async def upsert(self, chunks: Sequence[Chunk], vectors: Sequence[Vector]) -> int: ...

    async def delete_document(self, source: str, doc_id: str, keep_hash: str = "") -> int: ...

    async def delete_source(self, source: str) -> int: ...

    async def list_documents(self, source: str) -> dict[str, set[str]]: ...

    async def chunk_ids(self, source: str, doc_id: str, content_hash: str) -> set[str]: ...

    async def count_by_source(self) -> dict[str, int]: ...


class DocumentState(Protocol):
    """What storage remembers of one synced document."""

    @property
    def doc_id(self) -> str: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def chunk_count(self) -> int: ...

    @property
    def status(self) -> str: ...  # "ok" or "failed"

    @property
    def restricted(self) -> bool: ...

    @property
    def warning(self) -> str: ...  # indexed, with this wrong (a misspelt `access`)


@dataclass(frozen=True)
class RunCounts:
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    chunks_written: int = 0


class SyncState(Protocol):
    """Per-source document hashes and the `sync_runs` log. Blocking calls (run off the loop)."""

    def documents(self, source: str) -> Mapping[str, DocumentState]: ...

    def document(self, source: str, doc_id: str) -> DocumentState | None: ...

    def has_documents(self, source: str) -> bool: ...

    def document_ids(self, source: str, *, after: str = "", limit: int = 5000) -> list[str]:
        """Up to `limit` of the source's recorded ids greater than `after`, in order: a big
        source's ids read a page at a time."""
        ...

    def record_document(
        self,
        source: str,
        doc_id: str,
        *,
        content_hash: str,
        chunk_count: int,
        updated_at: datetime | None,
        status: str = "ok",
        error: str = "",
        restricted: bool = False,  # not readable by the public: reports hide its id
        warning: str = "",  # indexed, but the console should show what is wrong with it
    ) -> None: ...

    def forget_document(self, source: str, doc_id: str) -> None: ...

    def forget_source(self, source: str) -> None: ...

    def synced_sources(self) -> set[str]:
        """Names of the sources this state has synced documents or runs of."""
        ...

    def start_run(self, source: str, *, full: bool) -> int: ...

    def finish_run(
        self, run_id: int, counts: RunCounts, errors: Sequence[str], *, status: str,
        cursor: str | None = None,
    ) -> None: ...

    def last_success(self, source: str) -> datetime | None:
        """Start time of the source's last successful run: the incremental checkpoint."""
        ...

    def last_cursor(self, source: str) -> str | None:
        """The platform change cursor its last successful run stored (Graph delta links)."""
        ...

    def last_started(self, source: str, *, full: bool = False) -> datetime | None:
        """Start time of the source's latest run (with `full`, full run), whatever its end."""
        ...


class SyncObserver(Protocol):
    """Told of every recorded run of a source (`sift serve` counts them as metrics)."""

    def finished(self, summary: SyncSummary) -> None: ...

    def failed(self, source: str, full: bool) -> None: ...
