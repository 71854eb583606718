"""The Notion connector: pages shared with an integration (found by search, or the rows of chosen
databases' data sources), blocks as Markdown."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from datetime import datetime
from typing import Any

import httpx
from pydantic import Field

from rag.errors import ConfigError, SyncError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import DocumentParseError, as_datetime
from sync.connectors.common.http_client import JsonClient, Pacer, decode_json
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.notion_blocks import Block, blocks_to_markdown, rich_text

# 2025-09-03: a database is a container of one or more data sources, which hold the rows; a
# row's parent is its data source, and the data source is what a query names.
API_VERSION = "2025-09-03"
GONE = frozenset({403, 404})  # the integration lost access to this page: skip it
NEWEST_FIRST = {"timestamp": "last_edited_time", "direction": "descending"}
SEARCH = {"filter": {"property": "object", "value": "page"}, "sort": NEWEST_FIRST}
QUERY = {"sorts": [NEWEST_FIRST]}


class NotionSettings(RetryKnobs):
    """The `[sources.notion]` table; the source's `token` is the integration's secret."""

    requests_per_second: float = Field(3.0, gt=0)  # Notion's documented average limit
    max_depth: int = Field(5, ge=0)  # nested blocks fetched below a page's top level
    # Database ids: index only these databases' rows (every data source of each), instead of
    # every page the integration can find.
    databases: list[str] = Field(default_factory=list)


class NotionConnector:
    """Every page the integration can read; newest first, so incremental runs stop early."""

    cheap_ids = False

    def __init__(self, source: SourceConfig, settings: NotionSettings) -> None:
        self.source, self.settings = source, settings
        self.base = (source.url or "https://api.notion.com").rstrip("/") + "/v1/"
        self.label = f"Source '{source.name}' (Notion)"
        self._pacer = Pacer(settings.requests_per_second)

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[JsonClient]:
        s = self.settings
        headers = {"Authorization": f"Bearer {self.source.token}", "User-Agent": "sift-sync",
                   "Notion-Version": API_VERSION}
        async with httpx.AsyncClient(base_url=self.base, headers=headers,
                                     timeout=s.timeout_s) as http:
            yield s.client(http, pacer=self._pacer,
                             label=self.label,
                             auth_hint="the source's `token` (the integration secret) and "
                             "that the pages are shared with the integration")

    async def _listing(self, api: JsonClient, path: str,
                       query: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The pages of a search or a data source query, newest edit first, page by page."""
        body: dict[str, Any] = {**query, "page_size": 100}
        while True:
            page = decode_json(await api.request("POST", path, json=body))
            for item in page.get("results") or ():
                if isinstance(item, dict) and item.get("object") == "page" and not item.get(
                        "archived") and not item.get("in_trash"):
                    yield item
            if not page.get("has_more") or not page.get("next_cursor"):
                return
            body["start_cursor"] = page["next_cursor"]

    async def _data_sources(self, api: JsonClient) -> list[str]:
        """Every data source of the configured databases (retrieving a database lists them)."""
        found: list[str] = []
        for database in self.settings.databases:
            response = await api.get(f"databases/{database}", accept=GONE)
            if response.status_code in GONE:
                raise SyncError(f"database {database}: HTTP {response.status_code}",
                                user_message=f"{self.label}: the database {database} in "
                                "`notion.databases` does not exist or is not shared with "
                                "the integration.")
            found += [str(d["id"]) for d in decode_json(response).get("data_sources") or ()
                      if isinstance(d, dict) and d.get("id")]
        return found

    async def _listings(self, api: JsonClient) -> AsyncIterator[
            AsyncGenerator[dict[str, Any], None]]:
        """Search, or one query per data source of the configured databases."""
        if not self.settings.databases:
            yield self._listing(api, "search", SEARCH)
            return
        for data_source in await self._data_sources(api):
            yield self._listing(api, f"data_sources/{data_source}/query", QUERY)

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async with self._api() as api:
            async for listing in self._listings(api):
                async with aclosing(listing):
                    async for item in listing:
                        edited = as_datetime(item.get("last_edited_time"), "last_edited_time")
                        if since is not None and edited is not None and edited < since:
                            break  # sorted newest first: the rest is older still
                        yield await self._document(api, item, edited)

    async def list_ids(self) -> set[str]:
        async with self._api() as api:
            return {str(item["id"]) async for listing in self._listings(api)
                    async for item in listing}

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
