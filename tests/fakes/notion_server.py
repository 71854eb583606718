"""A fake Notion API at version 2025-09-03, as Notion documents it: POST /v1/search, GET
/v1/databases/{id} (its data sources), POST /v1/data_sources/{id}/query (their rows) and GET
/v1/blocks/{id}/children. It serves that version's shapes only, so it refuses other versions."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

SECRET = "ntn_fake_secret_4"
VERSION = "2025-09-03"
USER = {"object": "user", "id": "u-1"}


def text(content: str, **annotations: bool) -> list[dict[str, Any]]:
    marks = {"bold": False, "italic": False, "strikethrough": False, "underline": False,
             "code": False, "color": "default", **annotations}
    return [{"type": "text", "text": {"content": content, "link": None}, "annotations": marks,
             "plain_text": content, "href": None}]


def block(block_id: str, kind: str, children: list[dict[str, Any]] | None = None,
          **payload: Any) -> dict[str, Any]:
    """A block object; `children` are served under its id and set `has_children`."""
    return {"object": "block", "id": block_id, "type": kind, "has_children": bool(children),
            "archived": False, "in_trash": False, "created_time": "2026-01-01T00:00:00.000Z",
            "last_edited_time": "2026-01-01T00:00:00.000Z", kind: payload,
            "_children": children or []}


@dataclass
class NotionPage:
    id: str
    title: str
    blocks: list[dict[str, Any]]
    edited: str = "2026-01-02T10:00:00.000Z"
    tags: list[str] = field(default_factory=list)
    public: bool = False
    data_source: str = ""  # a row of this data source; "" a page at the workspace's top


@dataclass
class DataSource:
    id: str
    name: str


@dataclass
class NotionDatabase:
    """A database: a container of one or more data sources (their rows are NotionPages)."""

    id: str
    title: str
    data_sources: list[DataSource]


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"object": "error", "status": status, "code": code,
                              "message": message}, status=status)


class FakeNotion(LocalServer):
    """Pages and databases shared with the integration; `unshared` ids (pages' blocks,
    databases) answer 404 as Notion does for what the integration cannot see."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: dict[str, NotionPage] = {}
        self.databases: dict[str, NotionDatabase] = {}
        self.unshared: set[str] = set()
        self.faults: deque[Fault] = deque()
        self.times: list[float] = []
        self.paths: list[str] = []
        self.app.router.add_post("/v1/search", self._search)
        self.app.router.add_get("/v1/databases/{id}", self._database)
        self.app.router.add_post("/v1/data_sources/{id}/query", self._query)
        self.app.router.add_get("/v1/blocks/{id}/children", self._children)

    def add_database(self, database: NotionDatabase, rows: dict[str, list[NotionPage]]) -> None:
        """The database and its rows, by data source id."""
        self.databases[database.id] = database
        for data_source, pages in rows.items():
            for page in pages:
                page.data_source = data_source
                self.pages[page.id] = page

    def _database_of(self, data_source: str) -> NotionDatabase | None:
        return next((d for d in self.databases.values()
                     if any(s.id == data_source for s in d.data_sources)), None)

    def _gate(self, request: web.Request) -> web.Response | None:
        self.times.append(time.monotonic())
        self.paths.append(request.path)
        if request.headers.get("Authorization") != f"Bearer {SECRET}":
            return _error(401, "unauthorized", "API token is invalid.")
        version = request.headers.get("Notion-Version")
        if not version:
            return _error(400, "missing_version", "Notion-Version header failed validation")
        if version != VERSION:  # a limit of this fake: Notion still serves older versions
            return _error(400, "validation_error", f"this fake serves Notion-Version "
                          f"{VERSION} only, not {version}")
        if self.faults:
            fault = self.faults.popleft()
            return web.Response(status=fault.status, text=fault.body, headers=fault.headers,
                                content_type="application/json")
        return None

    def _page(self, page: NotionPage) -> dict[str, Any]:
        slug = page.title.replace(" ", "-")
        database = self._database_of(page.data_source)
        # A row's title property is the data source's own ("Name"); a page's is "title".
        parent, title = ({"type": "data_source_id", "data_source_id": page.data_source,
                          "database_id": database.id}, "Name") if database else (
            {"type": "workspace", "workspace": True}, "title")
        return {
            "object": "page", "id": page.id, "created_time": "2025-12-01T00:00:00.000Z",
            "last_edited_time": page.edited, "created_by": USER, "last_edited_by": USER,
            "cover": None, "icon": None, "parent": parent, "archived": False,
            "in_trash": False, "is_locked": False, "properties": {
                title: {"id": "title", "type": "title", "title": text(page.title)},
                "Tags": {"id": "tg", "type": "multi_select", "multi_select": [
                    {"id": f"o{i}", "name": t, "color": "blue"} for i, t in enumerate(page.tags)]}},
            "url": f"https://www.notion.so/{slug}-{page.id.replace('-', '')}",
            "public_url": f"https://acme.notion.site/{slug}" if page.public else None}

    def _data_source(self, database: NotionDatabase, source: DataSource) -> dict[str, Any]:
        return {
            "object": "data_source", "id": source.id, "title": text(source.name),
            "description": [], "parent": {"type": "database_id", "database_id": database.id},
            "database_parent": {"type": "workspace", "workspace": True}, "is_inline": False,
            "archived": False, "in_trash": False, "created_time": "2025-12-01T00:00:00.000Z",
            "last_edited_time": "2025-12-01T00:00:00.000Z", "created_by": USER,
            "last_edited_by": USER, "properties": {
                "Name": {"id": "title", "name": "Name", "type": "title", "title": {}},
                "Tags": {"id": "tg", "name": "Tags", "type": "multi_select",
                         "multi_select": {"options": []}}},
            "icon": None, "cover": None, "public_url": None,
            "url": f"https://www.notion.so/{source.id.replace('-', '')}"}

    @staticmethod
    def _list(rows: list[dict[str, Any]], body: dict[str, Any]) -> web.Response:
        start = int(body.get("start_cursor") or 0)
        size = min(int(body.get("page_size", 100)), 100)
        chunk, more = rows[start:start + size], start + size < len(rows)
        return web.json_response({
            "object": "list", "results": chunk,
            "next_cursor": str(start + size) if more else None, "has_more": more,
            "type": "page_or_data_source", "page_or_data_source": {}})

    def _newest_first(self, pages: list[NotionPage]) -> list[dict[str, Any]]:
        ordered = sorted(pages, key=lambda p: (p.edited, p.id), reverse=True)
        return [self._page(p) for p in ordered]

    async def _search(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        body = await request.json()
        kind = (body.get("filter") or {}).get("value")
        if kind not in (None, "page", "data_source"):  # "database" was 2022-06-28's
            return _error(400, "validation_error", "body failed validation: body.filter.value "
                          f'should be "page" or "data_source", instead was "{kind}".')
        rows = self._newest_first(list(self.pages.values())) if kind != "data_source" else []
        if kind != "page":
            rows += [self._data_source(d, s) for d in self.databases.values()
                     for s in d.data_sources]
        return self._list(rows, body)

    async def _database(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        found = self.databases.get(request.match_info["id"])
        if found is None or found.id in self.unshared:
            return _error(404, "object_not_found", "Could not find database with ID: "
                          f"{request.match_info['id']}. Make sure the relevant pages and "
                          "databases are shared with your integration.")
        return web.json_response({
            "object": "database", "id": found.id, "title": text(found.title),
            "description": [], "parent": {"type": "workspace", "workspace": True},
            "is_inline": False, "in_trash": False, "is_locked": False,
            "created_time": "2025-12-01T00:00:00.000Z",
            "last_edited_time": "2025-12-01T00:00:00.000Z",
            "data_sources": [{"id": s.id, "name": s.name} for s in found.data_sources],
            "icon": None, "cover": None, "public_url": None,
            "url": f"https://www.notion.so/{found.id.replace('-', '')}"})

    async def _query(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        source = request.match_info["id"]
        database = self._database_of(source)
        if database is None or database.id in self.unshared:
            return _error(404, "object_not_found", f"Could not find data_source with ID: "
                          f"{source}. Make sure the relevant pages and databases are shared "
                          "with your integration.")
        body = await request.json()
        if body.get("sorts") != [{"timestamp": "last_edited_time", "direction": "descending"}]:
            return _error(400, "validation_error", "this fake sorts by last_edited_time, "
                          "descending, only")
        return self._list(self._newest_first(
            [p for p in self.pages.values() if p.data_source == source]), body)

    def _find(self, block_id: str) -> list[dict[str, Any]] | None:
        if block_id in self.pages:
            return self.pages[block_id].blocks
        stack = [b for p in self.pages.values() for b in p.blocks]
        while stack:
            item = stack.pop()
            if item["id"] == block_id:
                return list(item["_children"])
            stack += item["_children"]
        return None

    async def _children(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        block_id = request.match_info["id"]
        found = None if block_id in self.unshared else self._find(block_id)
        if found is None:
            return web.json_response({"object": "error", "status": 404, "code":
                                      "object_not_found", "message": f"Could not find block "
                                      f"with ID: {block_id}."}, status=404)
        start = int(request.query.get("start_cursor", "0"))
        size = int(request.query.get("page_size", "100"))
        rows = [{k: v for k, v in b.items() if k != "_children"} for b in found]
        more = start + size < len(rows)
        return web.json_response({"object": "list", "results": rows[start:start + size],
                                  "next_cursor": str(start + size) if more else None,
                                  "has_more": more, "type": "block", "block": {}})
