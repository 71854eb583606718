"""The Zendesk Help Center connector: published articles; sections and categories as tags."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import httpx
from pydantic import Field, SecretStr

from rag.errors import ConfigError, SyncError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import DocumentParseError, as_datetime, html_to_markdown
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.zendesk_api import Denied, Place, ZendeskApi
from sync.connectors.zendesk_push import ZendeskReceiver
from sync.push import DEFAULT_TOLERANCE_S


class ZendeskSettings(RetryKnobs):
    """The `[sources.zendesk]` table."""

    email: str = ""  # the agent who owns the API token in `token`; empty: an OAuth token
    webhook_secret: SecretStr | None = None  # the webhook's signing secret (push notifications)
    webhook_tolerance_s: float = Field(DEFAULT_TOLERANCE_S, gt=0)  # older signed times refused
    # max_wait_s (60 s) matters here: the export allows 10 requests a minute, so 429s wait.


class ZendeskConnector:
    """Articles of one help center through the incremental export (drafts left out), and
    single articles by id for pushes. Listing every id costs a whole export: full passes prune,
    and unpublished or deleted articles named by a webhook leave at once."""

    cheap_ids = False

    def __init__(self, source: SourceConfig, settings: ZendeskSettings) -> None:
        self.source = source
        self.settings = settings
        self.site = source.url.rstrip("/") + "/"

    def _headers(self) -> dict[str, str]:
        token = self.source.token or ""
        if self.settings.email:  # API token: basic auth as "<email>/token"
            pair = f"{self.settings.email}/token:{token}".encode()
            auth = "Basic " + base64.b64encode(pair).decode()
        else:
            auth = f"Bearer {token}"
        return {"Authorization": auth, "Accept": "application/json", "User-Agent": "sift-sync"}

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[ZendeskApi]:
        s = self.settings
        label = f"Source '{self.source.name}' (Zendesk)"
        async with httpx.AsyncClient(base_url=self.site, headers=self._headers(),
                                     timeout=s.timeout_s) as http:
            client = s.client(http, label=label,
                                auth_hint="the source's `token` and `zendesk.email`")
            yield ZendeskApi(client, self.site, label)

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        start = 0 if since is None else max(0, int(since.timestamp()))
        async with self._api() as api:
            places = await api.places()
            async for article in api.export(start):
                yield self._document(article, places)

    async def list_ids(self) -> set[str]:
        async with self._api() as api:
            return {str(a["id"]) async for a in api.export(0)
                    if a.get("id") is not None and not a.get("draft")}

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        async with self._api() as api:
            places = await api.places()
            for doc_id in doc_ids:
                try:
                    article = await api.article(doc_id)
                except Denied:
                    raise
                except SyncError as exc:  # this article failed; the others still sync
                    yield DocumentFailure(doc_id, f"article {doc_id}: {exc.user_message}")
                    continue
                yield DocumentGone(doc_id) if article is None else self._document(article,
                                                                                   places)

    def _document(self, article: Mapping[str, Any], places: Mapping[str, Place]) -> Fetched:
        doc_id = "" if article.get("id") is None else str(article["id"])
        title = str(article.get("title") or article.get("name") or doc_id)
        if article.get("draft"):  # never indexed; a published article turned draft leaves
            return DocumentGone(doc_id)
        try:
            body = article.get("body")
            if not isinstance(body, str):
                raise DocumentParseError("the article has no HTML body")
            updated = as_datetime(article.get("updated_at"), "updated_at")
            created = as_datetime(article.get("created_at"), "created_at")
        except DocumentParseError as exc:
            return DocumentFailure(doc_id, f"article {doc_id} ({title}): {exc}")
        place = places.get(str(article.get("section_id")), Place())
        labels = [str(x) for x in article.get("label_names") or () if x]
        access, warnings = self._access(article.get("user_segment_id"))
        return SourceDocument(
            doc_id=doc_id, title=title, body=html_to_markdown(body).body,
            url=str(article.get("html_url") or ""),
            tags=tuple(dict.fromkeys(t for t in (place.category, place.section, *labels) if t)),
            doc_type="article", subtype=place.section,
            language=str(article.get("locale") or ""), published_at=created,
            updated_at=updated, access=access, warnings=warnings)

    @staticmethod
    def _access(segment: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """No user segment: anyone can view. A segment: its principal, which `[[groups]]`
        map to readers. Anything else restricts the article to nobody, and says so."""
        if segment is None:
            return ("public",), ()
        if isinstance(segment, int) or (isinstance(segment, str) and segment.isdigit()):
            return (f"zendesk:segment:{segment}",), ()
        return (), (f"user_segment_id {segment!r} is not an id: restricted to nobody",)


def build(source: SourceConfig, settings: ZendeskSettings) -> ZendeskConnector:
    for value, setting, what in ((source.url, "url", "the help center, e.g. "
                                  "https://acme.zendesk.com"),
                                 (source.token, "token", "an API token or OAuth token")):
        if not value:
            raise ConfigError(f"source {source.name} has no {setting}", user_message=f"Source "
                              f"'{source.name}' is zendesk but has no `{setting}` ({what}).")
    return ZendeskConnector(source, settings)


def push(source: SourceConfig, settings: ZendeskSettings) -> ZendeskReceiver:
    return ZendeskReceiver(settings.webhook_secret, settings.webhook_tolerance_s)


SPEC = ConnectorSpec("zendesk", ZendeskSettings, build, "Zendesk Help Center articles",
                     push=push)
