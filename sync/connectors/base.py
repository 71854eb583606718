"""The connector contract: documents changed since a checkpoint, every current doc id, a spec."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from sync.push import PushReceiver


@dataclass(frozen=True)
class SourceDocument:
    """One document of a knowledge platform, its body already converted to Markdown."""

    doc_id: str
    title: str
    body: str
    url: str = ""
    tags: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    doc_type: str = ""
    subtype: str = ""
    language: str = ""
    published_at: datetime | None = None
    updated_at: datetime | None = None
    access: tuple[str, ...] = ("public",)  # () restricts the document to nobody
    warnings: tuple[str, ...] = ()  # indexed, but the sync reports these (a bad `access`)


@dataclass(frozen=True)
class DocumentFailure:
    """A document the connector found but could not read; the job reports and skips it."""

    doc_id: str
    error: str


@dataclass(frozen=True)
class DocumentGone:
    """The platform says this document was deleted (a delta's `deleted` facet, a trashed
    file): the job removes it at once instead of waiting for a pruning pass."""

    doc_id: str


@dataclass(frozen=True)
class Checkpoint:
    """The platform's own change cursor (Graph delta links), yielded once at the end of
    `changes`. The job stores it with the run when the run succeeds and hands it back to the
    next incremental run. `complete`: this run listed every current document (a first pass,
    or a delta restarted from scratch), so whatever it did not list was deleted."""

    cursor: str
    complete: bool = False
    warnings: tuple[str, ...] = ()  # reported by the sync (a refused delta token)


Fetched = SourceDocument | DocumentFailure | DocumentGone


class Connector(Protocol):
    """A knowledge source. `since=None` means every document (a full pass).

    `access` holds the platform's own principals (`confluence:space:ENG`, `notion:user:…`)
    or `public` for "anyone can view". `cheap_ids` says that `list_ids` reads ids alone: one
    request per hundreds of ids or more, no bodies and no request per document (a directory
    walk, Drive's 1,000 ids a request, Confluence Cloud's 250), so every run (not only a full
    pass) prunes what the source deleted."""

    cheap_ids: bool

    def documents(self, since: datetime | None) -> AsyncIterator[Fetched]: ...

    async def list_ids(self) -> set[str]: ...


@runtime_checkable
class CursorSource(Protocol):
    """A connector that reads changes since its platform's cursor instead of since a time.
    `cursor=None` lists everything; the last item is the new `Checkpoint`."""

    def changes(self, cursor: str | None) -> AsyncIterator[Fetched | Checkpoint]: ...


@runtime_checkable
class Fetches(Protocol):
    """A connector that can read chosen documents by id (what a push notification names).
    An id the source no longer has comes back as DocumentGone; one it cannot read, as a
    DocumentFailure. Connectors without `fetch` get an incremental run instead."""

    def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]: ...


def fetcher(connector: object) -> Fetches | None:
    """The connector's targeted read, or None when it has none."""
    return connector if isinstance(connector, Fetches) else None


class ConnectorSettings(BaseModel):
    """A kind's own settings: the `[sources.<kind>]` table of a source in sift.toml."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # read, never rewritten


@dataclass(frozen=True)
class SourceConfig:
    """What every source has, whatever its kind (the top level of a `[[sources]]` table)."""

    name: str
    url: str = ""
    token: str | None = None
    path: Path | None = None
    default_access: tuple[str, ...] = ("public",)  # for documents that declare none
    # A file or page over this is skipped before it is read whole (SIFT_SYNC__MAX_FILE_MB).
    max_file_bytes: int = 50 * 2**20


@dataclass(frozen=True)
class ConnectorSpec:
    """A connector module's declaration: its kind, its settings model and its factory."""

    kind: str
    settings: type[ConnectorSettings]
    build: Callable[[SourceConfig, Any], Connector]
    summary: str  # one line for `--help`-like listings and error messages
    # The kind's webhook receiver (`POST /sync/hooks/<source>`); None: it takes no pushes.
    push: Callable[[SourceConfig, Any], PushReceiver] | None = None
