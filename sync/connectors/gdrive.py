"""The Google Drive connector: My Drive and shared drives through a service account."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field, SecretStr

from rag.errors import ConfigError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import (
    DocumentParseError,
    Parsed,
    as_datetime,
    csv_to_markdown,
    html_to_markdown,
)
from sync.connectors.common.files import file_to_markdown
from sync.connectors.common.oauth import RenewingToken
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.gdrive_api import (
    EXPORTS,
    DriveApi,
    ServiceAccount,
    access_of,
    access_token,
    rfc3339,
)
from sync.connectors.gdrive_push import DriveReceiver

API = "https://www.googleapis.com"
TEXT = (".md", ".markdown", ".txt")
FILES = (".docx", ".pptx", ".xlsx", ".pdf", ".html", ".htm", *TEXT)
KINDS = {"application/vnd.google-apps.document": "document",
         "application/vnd.google-apps.presentation": "presentation",
         "application/vnd.google-apps.spreadsheet": "spreadsheet"}


class GDriveSettings(RetryKnobs):
    """The `[sources.gdrive]` table."""

    key_file: Path | None = None  # the service account's JSON key
    subject: str = ""  # domain-wide delegation: read as this user (their My Drive too)
    drives: list[str] = Field(default_factory=list)  # shared drive ids; empty: all it sees
    max_file_mb: float = Field(50.0, gt=0)
    page_size: int = Field(100, ge=1, le=1000)
    timeout_s: float = Field(60.0, gt=0)
    channel_token: SecretStr | None = None  # the changes.watch channel's token (pushes)
    channel_id: str = ""  # when set, only that channel's messages are taken


class GDriveConnector:
    """Files the service account can read. Listing ids costs one request per 1,000 files,
    so every run prunes what was deleted or trashed."""

    cheap_ids = True

    def __init__(self, source: SourceConfig, settings: GDriveSettings) -> None:
        if settings.key_file is None:
            raise ConfigError(f"source {source.name} has no key_file", user_message=f"Source "
                              f"'{source.name}' is gdrive but has no `gdrive.key_file` (the "
                              "service account's JSON key).")
        self.source, self.settings = source, settings
        self.account = ServiceAccount.load(settings.key_file, source.name)
        self.base = (source.url or API).rstrip("/") + "/"
        self.label = f"Source '{source.name}' (Google Drive)"

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[DriveApi]:
        s = self.settings
        async with httpx.AsyncClient(base_url=self.base, timeout=s.timeout_s,
                                     follow_redirects=True) as http:
            http.auth = auth = RenewingToken(
                lambda _refused: access_token(http, self.account, s.subject, self.label))
            await auth.renew()  # a revoked key stops the run before anything is read
            http.headers["User-Agent"] = "sift-sync"
            yield DriveApi(s.client(http, label=self.label,
                                      auth_hint="`gdrive.key_file` and that the Drive API is "
                                      "enabled for the key's project"), s.page_size)

    def _scopes(self) -> list[str]:
        return list(self.settings.drives) or [""]

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        # Incremental runs see trashed files too (they changed), to delete them at once.
        query = "trashed = false" if since is None else f"modifiedTime > '{rfc3339(since)}'"
        async with self._api() as api:
            for drive in self._scopes():
                async for item in api.files(query, drive):
                    fetched = await self._file(api, item)
                    if fetched is not None:
                        yield fetched

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Chosen files (a push named them). One outside the configured shared drives, or no
        longer a document, is gone: nothing unconfigured gets indexed."""
        async with self._api() as api:
            for file_id in doc_ids:
                found = await api.file(file_id)
                if isinstance(found, str):
                    yield DocumentFailure(file_id, f"file {file_id}: cannot read it ({found}); "
                                          "skipped")
                    continue
                drives = self.settings.drives
                if found is not None and (not drives or found.get("driveId") in drives):
                    fetched = await self._file(api, found)
                    if fetched is not None:
                        yield fetched
                        continue
                yield DocumentGone(file_id)

    async def list_ids(self) -> set[str]:
        async with self._api() as api:
            return {str(item["id"]) for drive in self._scopes() async for item in api.files(
                "trashed = false", drive, fields="nextPageToken, files(id)")}

    async def _file(self, api: DriveApi, item: dict[str, Any]) -> Fetched | None:
        file_id, name = str(item["id"]), str(item.get("name") or item["id"])
        if item.get("trashed"):
            return DocumentGone(file_id)
        mime = str(item.get("mimeType") or "")
        suffix = name[name.rfind("."):].lower() if "." in name else ""
        if mime not in EXPORTS and suffix not in FILES:
            return None  # folders, shortcuts, forms, images: not documents
        where = f"file {name} ({item.get('webViewLink') or file_id})"
        size, limit = int(item.get("size") or 0), self.settings.max_file_mb
        if size > limit * 2**20:
            return DocumentFailure(file_id, f"{where} is {size / 2**20:.1f} MB, over the "
                                   f"{limit:g} MB limit (`gdrive.max_file_mb`): skipped")
        permissions = await api.permissions(file_id)
        if isinstance(permissions, str):
            return DocumentFailure(file_id, f"{where}: cannot read its permissions "
                                   f"({permissions}); skipped")
        data = await api.content(item, int(limit * 2**20))
        if isinstance(data, str):
            verb = "export" if mime in EXPORTS else "download"
            return DocumentFailure(file_id, f"{where}: the {verb} failed ({data}); skipped")
        try:
            parsed = _convert(data, mime, name, suffix)
            updated = as_datetime(item.get("modifiedTime"), "modifiedTime")
        except DocumentParseError as exc:
            return DocumentFailure(file_id, f"{where}: {exc}")
        people = [_get(item, "lastModifyingUser", "displayName")] + [
            o.get("displayName") for o in item.get("owners") or () if isinstance(o, dict)]
        return SourceDocument(
            doc_id=file_id, title=name if mime in EXPORTS else name.rsplit(".", 1)[0],
            body=parsed.body, url=str(item.get("webViewLink") or ""),
            authors=tuple(dict.fromkeys(str(p) for p in people if p)),
            doc_type=KINDS.get(mime, "file"), subtype=suffix.lstrip("."),
            updated_at=updated, access=access_of(permissions))


def _get(item: Any, *path: str) -> Any:
    for key in path:
        item = item.get(key) if isinstance(item, dict) else None
    return item


def _convert(data: bytes, mime: str, name: str, suffix: str) -> Parsed:
    export = EXPORTS.get(mime)
    text = data.decode("utf-8", errors="replace")
    if export == "text/html":
        return html_to_markdown(text)
    if export == "text/csv":
        return csv_to_markdown(text)
    if export == "text/plain" or suffix in TEXT:
        if not text.strip():
            raise DocumentParseError("the file has no text")
        return Parsed(text.strip() + "\n", {})
    return file_to_markdown(data, name)


def build(source: SourceConfig, settings: GDriveSettings) -> GDriveConnector:
    if source.url and not source.url.startswith(("http://", "https://")):
        raise ConfigError(f"source {source.name} url {source.url!r}", user_message=f"Source "
                          f"'{source.name}': `url` must be the API's http(s) base, or unset.")
    return GDriveConnector(source, settings)


def push(source: SourceConfig, settings: GDriveSettings) -> DriveReceiver:
    return DriveReceiver(settings.channel_token, settings.channel_id)


SPEC = ConnectorSpec("gdrive", GDriveSettings, build, "Google Drive files and shared drives "
                     "through a service account", push=push)
