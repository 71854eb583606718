"""The Notion connector: pages shared with an integration, found by search, blocks as Markdown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import httpx
from pydantic import Field

from rag.errors import ConfigError
from sync.connectors.base import (
    ConnectorSettings,
    ConnectorSpec,
    DocumentFailure,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.convert import DocumentParseError, as_datetime
from sync.connectors.http_client import JsonClient, Pacer, decode_json
from sync.connectors.notion_blocks import Block, blocks_to_markdown, rich_text

API_VERSION = "2022-06-28"
GONE = frozenset({403, 404})  # the integration lost access to this page: skip it


class NotionSettings(ConnectorSettings):
    """The `[sources.notion]` table; the source's `token` is the integration's secret."""

    requests_per_second: float = Field(3.0, gt=0)  # Notion's documented average limit
    max_depth: int = Field(5, ge=0)  # nested blocks fetched below a page's top level
    max_retries: int = Field(5, ge=0)
    timeout_s: float = Field(30.0, gt=0)
    max_wait_s: float = Field(60.0, gt=0)
    backoff_s: float = Field(0.5, gt=0)


class NotionConnector:
    """Every page the integration can read; newest first, so incremental runs stop early."""

    cheap_ids = False

    def __init__(self, source: SourceConfig, settings: NotionSettings) -> None:
        self.source, self.settings = source, settings
        self.base = (source.url or "https://api.notion.com").rstrip("/") + "/v1/"
        self._pacer = Pacer(settings.requests_per_second)

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[JsonClient]:
        s = self.settings
        headers = {"Authorization": f"Bearer {self.source.token}", "User-Agent": "sift-sync",
                   "Notion-Version": API_VERSION}
        async with httpx.AsyncClient(base_url=self.base, headers=headers,
                                     timeout=s.timeout_s) as http:
            yield JsonClient(http, max_retries=s.max_retries, backoff_s=s.backoff_s,
                             max_wait_s=s.max_wait_s, pacer=self._pacer,
                             label=f"Source '{self.source.name}' (Notion)",
                             auth_hint="the source's `token` (the integration secret) and "
                             "that the pages are shared with the integration")

    async def _search(self, api: JsonClient) -> AsyncIterator[dict[str, Any]]:
        body: dict[str, Any] = {"filter": {"property": "object", "value": "page"},
                                "sort": {"direction": "descending",
                                         "timestamp": "last_edited_time"}, "page_size": 100}
        while True:
            page = decode_json(await api.request("POST", "search", json=body))
            for item in page.get("results") or ():
                if isinstance(item, dict) and not item.get("archived") and not item.get(
                        "in_trash"):
                    yield item
            if not page.get("has_more") or not page.get("next_cursor"):
                return
            body["start_cursor"] = page["next_cursor"]

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async with self._api() as api:
            async for item in self._search(api):
                edited = as_datetime(item.get("last_edited_time"), "last_edited_time")
                if since is not None and edited is not None and edited < since:
                    return  # sorted newest first: the rest is older still
                yield await self._document(api, item, edited)

    async def list_ids(self) -> set[str]:
        async with self._api() as api:
            return {str(item["id"]) async for item in self._search(api)}

    async def _children(self, api: JsonClient, block_id: str) -> list[Block] | None:
        """Every child block of one block (paged), or None when the page is not shared."""
        found: list[Block] = []
        params: dict[str, Any] = {"page_size": 100}
        while True:
            response = await api.get(f"blocks/{block_id}/children", params, accept=GONE)
            if response.status_code in GONE:
                return None
            page = decode_json(response)
            found += [b for b in page.get("results") or () if isinstance(b, dict)]
            if not page.get("has_more") or not page.get("next_cursor"):
                return found
            params["start_cursor"] = page["next_cursor"]

    async def _tree(self, api: JsonClient, page_id: str) -> dict[str, list[Block]] | None:
        """Children per block id, breadth first down to max_depth."""
        tree: dict[str, list[Block]] = {}
        level, depth = [page_id], 0
        while level and depth <= self.settings.max_depth:
            below = []
            for block_id in level:
                blocks = await self._children(api, block_id)
                if blocks is None:
                    return None
                tree[block_id] = blocks
                below += [str(b["id"]) for b in blocks if b.get("has_children") and "id" in b
                          and b.get("type") != "child_page"]  # a sub-page is its own document
            level, depth = below, depth + 1
        return tree

    async def _document(self, api: JsonClient, item: dict[str, Any],
                        edited: datetime | None) -> Fetched:
        page_id, title = str(item["id"]), _title(item)
        tree = await self._tree(api, page_id)
        if tree is None:
            return DocumentFailure(page_id, f"page {title or page_id}: the integration may not "
                                   "read its content; skipped")
        try:
            body = blocks_to_markdown(tree[page_id], tree)
        except DocumentParseError as exc:
            return DocumentFailure(page_id, f"page {title or page_id}: {exc}")
        return SourceDocument(
            doc_id=page_id, title=title or "Untitled", body=body or title, url=str(
                item.get("url") or ""), tags=_tags(item), doc_type="page", updated_at=edited,
            access=("public",) if item.get("public_url") else ("notion:workspace",))


def _title(item: dict[str, Any]) -> str:
    for prop in (item.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "title":
            return rich_text(prop.get("title")).strip()
    return ""


def _tags(item: dict[str, Any]) -> tuple[str, ...]:
    tags: list[str] = []
    for prop in (item.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "multi_select":
            tags += [str(o["name"]) for o in prop.get("multi_select") or () if o.get("name")]
        elif isinstance(prop, dict) and prop.get("type") == "select" and prop.get("select"):
            tags.append(str(prop["select"].get("name") or ""))
    return tuple(t for t in dict.fromkeys(tags) if t)


def build(source: SourceConfig, settings: NotionSettings) -> NotionConnector:
    if not source.token:
        raise ConfigError(f"source {source.name} has no token", user_message=f"Source "
                          f"'{source.name}' is notion but has no `token` (the integration's "
                          "internal secret).")
    if source.url and not source.url.startswith(("http://", "https://")):
        raise ConfigError(f"source {source.name} url {source.url!r}", user_message=f"Source "
                        f"'{source.name}': `url` must be the API's http(s) base, or unset.")
    return NotionConnector(source, settings)


SPEC = ConnectorSpec("notion", NotionSettings, build, "Notion pages shared with an integration")
