"""A local fake knowledge platform: the REST/JSON contract the http connector expects, scripted."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer


@dataclass
class Fault:
    """A scripted answer for the next request whose path starts with `path`."""

    status: int = 500
    body: str = '{"error": "boom"}'
    headers: dict[str, str] = field(default_factory=dict)
    path: str = "/"


def rate_limited(retry_after: str, path: str = "/") -> Fault:
    return Fault(429, '{"error": "slow down"}', {"Retry-After": retry_after}, path)


def malformed(path: str = "/") -> Fault:
    return Fault(200, '{"items": [{"id": "a", "title": ', {}, path)


@dataclass(frozen=True)
class Seen:
    path: str
    query: dict[str, str]
    authorization: str
    at: float


def article(doc_id: str, title: str, body: str, updated_at: str = "2026-01-01T00:00:00Z",
            **extra: Any) -> dict[str, Any]:
    return {"id": doc_id, "title": title, "body": body, "updated_at": updated_at, **extra}


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class FakePlatform(LocalServer):
    """`/articles` pages by opaque cursor, by next link or by page number (`pagination`);
    `/articles/ids` lists every id. Requests are logged; faults are served first."""

    def __init__(self, token: str = "", pagination: str = "cursor",
                 max_limit: int = 1000) -> None:
        super().__init__()
        self.token = token
        self.pagination = pagination
        self.max_limit = max_limit  # platforms cap page sizes, whatever the client asks for
        self.articles: dict[str, dict[str, Any]] = {}
        self.faults: deque[Fault] = deque()
        self.requests: list[Seen] = []
        self.app.router.add_get("/articles", self._list)
        self.app.router.add_get("/articles/ids", self._ids)
        self.app.router.add_get("/articles/{id}", self._one)  # after /ids, which it would take

    def put(self, item: dict[str, Any]) -> None:
        self.articles[str(item["id"])] = item

    def paths(self, prefix: str = "/") -> list[Seen]:
        return [r for r in self.requests if r.path.startswith(prefix)]

    def _fault(self, request: web.Request) -> web.Response | None:
        for fault in list(self.faults):
            if request.path.startswith(fault.path):
                self.faults.remove(fault)
                return web.Response(status=fault.status, text=fault.body,
                                    headers=fault.headers, content_type="application/json")
        return None

    def _check(self, request: web.Request) -> web.Response | None:
        self.requests.append(Seen(request.path, dict(request.query),
                                  request.headers.get("Authorization", ""),
                                  datetime.now(UTC).timestamp()))
        if self.token and request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"error": "unauthorised"}, status=401)
        return self._fault(request)

    def _page(self, request: web.Request, rows: list[Any], key: str) -> web.Response:
        limit = min(int(request.query.get("limit", "100")), self.max_limit)
        if self.pagination == "page":
            start = (int(request.query.get("page", "1")) - 1) * limit
        else:
            start = int(request.query.get("cursor", "0"))
        chunk, end = rows[start:start + limit], start + limit
        more = end < len(rows)
        body: dict[str, Any] = {key: chunk}
        if self.pagination == "cursor":
            body["next"] = str(end) if more else None
        elif self.pagination == "link":
            body["next"] = f"{request.path}?cursor={end}&limit={limit}" if more else None
            if "updated_since" in request.query and more:
                body["next"] += f"&updated_since={request.query['updated_since']}"
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def _list(self, request: web.Request) -> web.Response:
        refused = self._check(request)
        if refused is not None:
            return refused
        since = request.query.get("updated_since")
        rows = sorted(self.articles.values(), key=lambda a: str(a.get("id")))
        if since:
            cutoff = _parse(since)
            rows = [a for a in rows if _parse(str(a.get("updated_at"))) >= cutoff]
        return self._page(request, rows, "items")

    async def _ids(self, request: web.Request) -> web.Response:
        refused = self._check(request)
        if refused is not None:
            return refused
        return self._page(request, sorted(self.articles), "ids")

    async def _one(self, request: web.Request) -> web.Response:
        refused = self._check(request)
        if refused is not None:
            return refused
        item = self.articles.get(request.match_info["id"])
        if item is None:
            return web.json_response({"error": "not found"}, status=404)
        return web.json_response(item)
