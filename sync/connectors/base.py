"""The connector contract: documents changed since a checkpoint, and every current doc id."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


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


Fetched = SourceDocument | DocumentFailure


class Connector(Protocol):
    """A knowledge source. `since=None` means every document (a full pass)."""

    def documents(self, since: datetime | None) -> AsyncIterator[Fetched]: ...

    async def list_ids(self) -> set[str]: ...
