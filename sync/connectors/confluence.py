"""The Confluence connector: pages of chosen spaces, labels as tags, restrictions as access."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Literal

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
from sync.connectors.common.convert import DocumentParseError, as_datetime
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.confluence_api import CloudApi, DataCenterApi, Page, Space
from sync.connectors.confluence_push import ConfluenceReceiver
from sync.connectors.confluence_storage import storage_to_markdown
from sync.push import DEFAULT_TOLERANCE_S


class ConfluenceSettings(RetryKnobs):
    """The `[sources.confluence]` table."""

    deployment: Literal["cloud", "datacenter"] = "cloud"
    email: str = ""  # Cloud: the account that owns the API token; empty: token is a PAT
    spaces: list[str] = Field(default_factory=list)  # space keys; empty: every readable one
    public_spaces: list[str] = Field(default_factory=list)  # "anyone can view" spaces
    page_size: int = Field(50, ge=1, le=250)
    webhook_secret: SecretStr | None = None  # Data Center webhooks' secret (push notifications)
    webhook_tolerance_s: float = Field(DEFAULT_TOLERANCE_S, gt=0)  # older signed times refused


class ConfluenceConnector:
    """Every current page of the chosen spaces. On Cloud the id listing is the v2 listing
    without bodies, 250 ids a request (400 for 100,000 pages), so every run prunes what was
    deleted; Data Center's is its content search, pruned by the full pass."""

    def __init__(self, source: SourceConfig, settings: ConfluenceSettings) -> None:
        self.source = source
        self.settings = settings
        self.site = source.url.rstrip("/") + "/"
        self.cheap_ids = settings.deployment == "cloud"

    def _headers(self) -> dict[str, str]:
        token = self.source.token or ""
        if self.settings.email:  # Cloud API tokens: basic auth as the token's account
            pair = f"{self.settings.email}:{token}".encode()
            auth = "Basic " + base64.b64encode(pair).decode()
        else:  # Data Center personal access tokens (and Cloud OAuth tokens)
            auth = f"Bearer {token}"
        return {"Authorization": auth, "Accept": "application/json", "User-Agent": "sift-sync"}

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[CloudApi | DataCenterApi]:
        s = self.settings
        hint = ("the source's `token` and `confluence.email`" if s.email
                else "the source's `token`")
        async with httpx.AsyncClient(base_url=self.site, headers=self._headers(),
                                     timeout=s.timeout_s) as http:
            client = s.client(http, auth_hint=hint,
                                label=f"Source '{self.source.name}' (Confluence)")
            kind = CloudApi if s.deployment == "cloud" else DataCenterApi
            yield kind(client, self.site, s.page_size)

    async def _spaces(self, api: CloudApi | DataCenterApi) -> tuple[list[Space], list[str]]:
        """The readable spaces, and the configured keys this token cannot see."""
        found = await api.spaces(self.settings.spaces)
        keys = {s.key for s in found}
        return found, [k for k in self.settings.spaces if k not in keys]

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async with self._api() as api:
            spaces, unreadable = await self._spaces(api)
            for key in unreadable:
                yield DocumentFailure("", f"space {key}: not found, or the token may not "
                                      "read it; skipped")
            for space in spaces:
                async for page in api.pages(space, since, body=True):
                    detailed = await api.details(page)
                    yield (self._document(detailed) if isinstance(detailed, Page) else
                           DocumentFailure(page.id, f"page {page.id} ({page.title}): cannot "
                                           f"read its labels or restrictions ({detailed})"))

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Pages by id (a webhook named them): gone when deleted, trashed, moved out of the
        chosen spaces, or no longer readable by the token."""
        async with self._api() as api:
            spaces, _ = await self._spaces(api)
            for doc_id in doc_ids:
                page = await api.page(doc_id, spaces) if doc_id.isdigit() else None
                if page is None:
                    yield DocumentGone(doc_id)
                    continue
                detailed = await api.details(page)
                yield (self._document(detailed) if isinstance(detailed, Page) else
                       DocumentFailure(page.id, f"page {page.id} ({page.title}): cannot "
                                       f"read its labels or restrictions ({detailed})"))

    async def list_ids(self) -> set[str]:
        async with self._api() as api:
            spaces, _ = await self._spaces(api)
            return {page.id for space in spaces
                    async for page in api.pages(space, None, body=False)}

    def _document(self, page: Page) -> Fetched:
        try:
            if page.body is None:
                raise DocumentParseError("the page has no storage-format body")
            body = storage_to_markdown(page.body)
            updated = as_datetime(page.updated, "version date")
        except DocumentParseError as exc:
            return DocumentFailure(page.id, f"page {page.id} ({page.title}): {exc}")
        return SourceDocument(
            doc_id=page.id, title=page.title or page.id, body=body, url=page.url,
            tags=page.labels or (), authors=page.authors, channels=(), doc_type="page",
            subtype=page.space, updated_at=updated, access=self._access(page))

    def _access(self, page: Page) -> tuple[str, ...]:
        if page.readers:  # page restrictions narrow the space's viewers to these
            return page.readers
        if page.space in self.settings.public_spaces:
            return ("public",)
        return (f"confluence:space:{page.space}",)


def build(source: SourceConfig, settings: ConfluenceSettings) -> ConfluenceConnector:
    for value, setting, what in ((source.url, "url", "the site, e.g. https://acme.atlassian."
                                  "net/wiki"), (source.token, "token", "an API token or PAT")):
        if not value:
            raise ConfigError(f"source {source.name} has no {setting}", user_message=f"Source "
                              f"'{source.name}' is confluence but has no `{setting}` ({what}).")
    return ConfluenceConnector(source, settings)


def push(source: SourceConfig, settings: ConfluenceSettings) -> ConfluenceReceiver:
    return ConfluenceReceiver(settings.webhook_secret, settings.webhook_tolerance_s)


SPEC = ConnectorSpec("confluence", ConfluenceSettings, build, "Confluence Cloud or Data Center "
                     "pages by space", push=push)
