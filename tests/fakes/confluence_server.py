"""A fake Confluence: Cloud REST v2 under /wiki and Data Center v1 under /, Atlassian's shapes."""

from __future__ import annotations

import base64
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

EMAIL, TOKEN = "ana@example.com", "atl-token-5"
MAX_LIMIT = 250  # Cloud v2 listings' largest `limit`
_EDITS = [0]  # bumped by every change to any FakePage: the sorted listings' cache key


@dataclass(slots=True)
class FakePage:
    id: str
    space: str
    title: str
    body: str | None
    updated: str = "2026-01-01T10:00:00.000Z"
    labels: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)  # read restrictions
    users: list[str] = field(default_factory=list)
    author: str = "Ana Lima"
    status: str = "current"  # or "trashed": listings leave it out, a read by id says so

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        _EDITS[0] += 1


class _Pages(dict[str, FakePage]):
    """Pages by id; adding or removing one bumps the edits, so listings re-sort only then."""

    def __setitem__(self, key: str, value: FakePage) -> None:
        super().__setitem__(key, value)
        _EDITS[0] += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        _EDITS[0] += 1

    def pop(self, key: str, *default: Any) -> Any:
        _EDITS[0] += 1
        return super().pop(key, *default)


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class FakeConfluence(LocalServer):
    """Pages of spaces; `hidden` spaces and `locked` pages answer as if the token lacked
    permission; `faults` are served first (429 + Retry-After). Requests are counted."""

    def __init__(self) -> None:
        super().__init__()
        self.spaces: dict[str, str] = {}  # key -> Cloud id
        self.pages: dict[str, FakePage] = _Pages()
        self._sorted: dict[str, tuple[Any, list[FakePage]]] = {}  # space -> (key, pages)
        self.hidden: set[str] = set()
        self.locked: set[str] = set()
        self.faults: deque[Fault] = deque()
        self.requests: list[str] = []
        r = self.app.router
        r.add_get("/wiki/api/v2/spaces", self._v2_spaces)
        r.add_get("/wiki/api/v2/spaces/{id}/pages", self._v2_pages)
        r.add_get("/wiki/api/v2/pages/{id}/labels", self._v2_labels)
        r.add_get("/wiki/api/v2/pages/{id}", self._v2_one)
        r.add_get("/wiki/rest/api/content/{id}/restriction/byOperation/read", self._v1_read)
        r.add_get("/rest/api/space/{key}", self._dc_space)
        r.add_get("/rest/api/content/search", self._dc_search)
        r.add_get("/rest/api/content/{id}", self._dc_one)  # after search, which it would take

    def put(self, page: FakePage) -> None:
        if page.space not in self.spaces:
            self.spaces[page.space] = str(100 + len(self.spaces))
        self.pages[page.id] = page

    def generate(self, count: int, spaces: Sequence[str] = ("ENG",), first_id: int = 100_000,
                 newest: str = "2026-06-01T00:00:00") -> list[str]:
        """`count` pages spread over `spaces`, one minute apart back from `newest`: numeric
        ids from `first_id`, their bodies a handful of shared strings (100,000 pages cost a
        few tens of MB); returns the ids."""
        start = datetime.fromisoformat(newest).replace(tzinfo=UTC)
        ids = []
        for n in range(count):
            page_id, space = str(first_id + n), spaces[n % len(spaces)]
            stamp = (start - timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            self.put(FakePage(page_id, space, f"Runbook {page_id}", _BODIES[n % len(_BODIES)],
                              updated=stamp))
            ids.append(page_id)
        return ids

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        cloud = request.path.startswith("/wiki/")
        expected = ("Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
                    if cloud else f"Bearer {TOKEN}")
        if request.headers.get("Authorization") != expected:
            return web.json_response({"code": 401, "message": "Unauthorized"}, status=401)
        for fault in list(self.faults):
            if request.path.startswith(fault.path):
                self.faults.remove(fault)
                return web.Response(status=fault.status, text=fault.body, headers=fault.headers,
                                    content_type="application/json")
        return None

    def _visible(self, space: str) -> list[FakePage]:
        """The space's current pages, newest edit first (sorted again only after a change)."""
        if space in self.hidden:
            return []
        key, rows = self._sorted.get(space, (None, []))
        if key != (_EDITS[0], id(self.pages)):
            rows = sorted((p for p in self.pages.values()
                           if p.space == space and p.status == "current"),
                          key=lambda p: (p.updated, p.id), reverse=True)
            self._sorted[space] = ((_EDITS[0], id(self.pages)), rows)
        return rows

    def _cursor_page(self, request: web.Request, rows: Sequence[Any],
                     row: Callable[[Any], Any] = lambda r: r) -> dict[str, Any]:
        """One page of `rows` from the request's `cursor`, at most `limit` (≤ 250) long, with
        the next page's link in `_links.next` and the `Link` header, as Cloud v2 sends it."""
        limit = min(int(request.query.get("limit", "25")), MAX_LIMIT)
        start = int(base64.b64decode(request.query["cursor"]) if "cursor" in request.query
                    else 0)
        links: dict[str, str] = {"base": f"{self.url}/wiki"}
        if start + limit < len(rows):
            query = {k: v for k, v in request.query.items() if k != "cursor"}
            query["cursor"] = base64.b64encode(str(start + limit).encode()).decode()
            links["next"] = str(request.rel_url.with_query(query))
        return {"results": [row(r) for r in rows[start:start + limit]], "_links": links}

    def _listing(self, request: web.Request, rows: Sequence[Any],
                 row: Callable[[Any], Any] = lambda r: r) -> web.Response:
        body = self._cursor_page(request, rows, row)
        follow = body["_links"].get("next")
        headers = {"Link": f'<{follow}>; rel="next"'} if follow else {}
        return web.json_response(body, headers=headers)

    async def _v2_spaces(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        keys = request.query.get("keys", "")
        wanted = keys.split(",") if keys else sorted(self.spaces)
        rows = [{"id": self.spaces[k], "key": k, "name": k.title(), "type": "global",
                 "status": "current", "_links": {"webui": f"/spaces/{k}"}}
                for k in wanted if k in self.spaces and k not in self.hidden]
        return self._listing(request, rows)

    def _v2_page(self, page: FakePage, body: bool) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": page.id, "status": page.status, "title": page.title,
            "spaceId": self.spaces[page.space], "authorId": "557058:ana", "createdAt":
            "2025-06-01T09:00:00.000Z", "version": {"number": 2, "message": "", "minorEdit":
                                                   False, "authorId": "557058:ana",
                                                   "createdAt": page.updated},
            "_links": {"webui": f"/spaces/{page.space}/pages/{page.id}",
                       "tinyui": f"/x/{page.id}"}}
        if body:
            row["body"] = ({"storage": {"representation": "storage", "value": page.body}}
                           if page.body is not None else {})
        return row

    async def _v2_pages(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        key = next((k for k, v in self.spaces.items() if v == request.match_info["id"]), "")
        body = request.query.get("body-format") == "storage"
        return self._listing(request, self._visible(key), lambda p: self._v2_page(p, body))

    async def _v2_labels(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        page = self.pages[request.match_info["id"]]
        rows = [{"id": str(900 + i), "name": n, "prefix": "global"}
                for i, n in enumerate(page.labels)]
        return web.json_response({"results": rows, "_links": {}})

    def _restrictions(self, page: FakePage) -> dict[str, Any]:
        groups = [{"type": "group", "name": g, "id": f"g-{g}"} for g in page.groups]
        users = [{"type": "known", "accountId": u, "username": u, "displayName": u}
                 for u in page.users]
        return {"user": {"results": users, "start": 0, "limit": 200, "size": len(users)},
                "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)}}

    async def _v1_read(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        page = self.pages[request.match_info["id"]]
        if page.id in self.locked:
            return web.json_response({"statusCode": 403, "message": "Not permitted to view "
                                      "restrictions"}, status=403)
        return web.json_response({"operation": "read",
                                  "restrictions": self._restrictions(page)})

    async def _dc_space(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        key = request.match_info["key"]
        if key not in self.spaces or key in self.hidden:
            return web.json_response({"statusCode": 404, "message": f"No space with key : "
                                      f"{key}"}, status=404)
        return web.json_response({"id": int(self.spaces[key]), "key": key, "name": key.title(),
                                  "type": "global"})

    def _dc_page(self, page: FakePage) -> dict[str, Any]:
        return {
            "id": page.id, "type": "page", "status": page.status, "title": page.title,
            "space": {"key": page.space, "name": page.space.title()},
            "history": {"createdBy": {"type": "known", "username": "ana",
                                      "displayName": page.author}},
            "version": {"by": {"displayName": page.author}, "when": page.updated, "number": 2},
            "body": {"storage": {"value": page.body, "representation": "storage"}}
            if page.body is not None else {},
            "metadata": {"labels": {"results": [{"prefix": "global", "name": n}
                                                for n in page.labels], "size": len(page.labels)}},
            "restrictions": {"read": {"operation": "read",
                                      "restrictions": self._restrictions(page)}},
            "_links": {"webui": f"/display/{page.space}/{page.id}"}}

    async def _dc_search(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        cql = request.query.get("cql", "")
        space = re.search(r'space="([^"]+)"', cql)
        since = re.search(r'lastmodified >= "([^"]+)"', cql)
        rows = self._visible(space.group(1)) if space else []
        if since:
            cutoff = datetime.strptime(since.group(1), "%Y/%m/%d %H:%M").replace(tzinfo=UTC)
            rows = [p for p in rows if _when(p.updated) >= cutoff]
        start, limit = int(request.query.get("start", "0")), int(request.query.get("limit", "25"))
        chunk = rows[start:start + limit]
        links = {"base": self.url, "context": ""}
        if start + limit < len(rows):
            links["next"] = str(request.rel_url.update_query(start=str(start + limit)))
        return web.json_response({"results": [self._dc_page(p) for p in chunk], "start": start,
                                  "limit": limit, "size": len(chunk), "_links": links})

    def _readable(self, request: web.Request) -> FakePage | None:
        page = self.pages.get(request.match_info["id"])
        return None if page is None or page.space in self.hidden else page

    async def _v2_one(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        page = self._readable(request)
        if page is None:
            return web.json_response({"errors": [{"status": 404, "code": "NOT_FOUND",
                                                  "title": "Not Found", "detail": None}]},
                                     status=404)
        row = self._v2_page(page, request.query.get("body-format") == "storage")
        row["_links"]["base"] = f"{self.url}/wiki"
        return web.json_response(row)

    async def _dc_one(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        page = self._readable(request)
        if page is None:
            return web.json_response({"statusCode": 404, "message": "No content found with id"
                                      f" : ContentId{{id={request.match_info['id']}}}"},
                                     status=404)
        row = self._dc_page(page)
        row["_links"].update(base=self.url, context="")
        return web.json_response(row)


# Storage-format bodies of the generated pages, about a kB each, as a short runbook page is.
_SERVICES = ("billing", "search", "login", "mail", "queue", "cache", "backup", "gateway")
_BODIES = tuple(
    f"<h2>Step {k}</h2><p>" + " ".join(f"Check the {w} service before the {k}th rollout "
                                        "and write down what its dashboard shows."
                                        for w in _SERVICES[k % 4:])
    + "</p><ul>" + "".join(f"<li>Item {i} of runbook section {k}</li>" for i in range(6))
    + "</ul>" for k in range(16))
