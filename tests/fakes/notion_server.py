"""A fake Notion API: POST /v1/search, GET /v1/blocks/{id}/children, as Notion documents."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

SECRET = "ntn_fake_secret_4"


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


class FakeNotion(LocalServer):
    """Pages shared with the integration; `unshared` pages answer 404 for their blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: dict[str, NotionPage] = {}
        self.unshared: set[str] = set()
        self.faults: deque[Fault] = deque()
        self.times: list[float] = []
        self.app.router.add_post("/v1/search", self._search)
        self.app.router.add_get("/v1/blocks/{id}/children", self._children)

    def _gate(self, request: web.Request) -> web.Response | None:
        self.times.append(time.monotonic())
        if request.headers.get("Authorization") != f"Bearer {SECRET}":
            return web.json_response({"object": "error", "status": 401, "code":
                                      "unauthorized", "message": "API token is invalid."},
                                     status=401)
        if not request.headers.get("Notion-Version"):
            return web.json_response({"object": "error", "status": 400, "code":
                                      "missing_version", "message": "Notion-Version header "
                                      "failed validation"}, status=400)
        if self.faults:
            fault = self.faults.popleft()
            return web.Response(status=fault.status, text=fault.body, headers=fault.headers,
                                content_type="application/json")
        return None

    def _page(self, page: NotionPage) -> dict[str, Any]:
        slug = page.title.replace(" ", "-")
        return {
            "object": "page", "id": page.id, "created_time": "2025-12-01T00:00:00.000Z",
            "last_edited_time": page.edited, "created_by": {"object": "user", "id": "u-1"},
            "last_edited_by": {"object": "user", "id": "u-1"}, "cover": None, "icon": None,
            "parent": {"type": "workspace", "workspace": True}, "archived": False,
            "in_trash": False, "properties": {
                "title": {"id": "title", "type": "title", "title": text(page.title)},
                "Tags": {"id": "tg", "type": "multi_select", "multi_select": [
                    {"id": f"o{i}", "name": t, "color": "blue"} for i, t in enumerate(page.tags)]}},
            "url": f"https://www.notion.so/{slug}-{page.id.replace('-', '')}",
            "public_url": f"https://acme.notion.site/{slug}" if page.public else None}

    async def _search(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        query = await request.json()
        rows = sorted(self.pages.values(), key=lambda p: (p.edited, p.id), reverse=True)
        start = int(query.get("start_cursor") or 0)
        size = min(int(query.get("page_size", 100)), 100)
        chunk, more = rows[start:start + size], start + size < len(rows)
        return web.json_response({
            "object": "list", "results": [self._page(p) for p in chunk],
            "next_cursor": str(start + size) if more else None, "has_more": more,
            "type": "page_or_database", "page_or_database": {}})

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
