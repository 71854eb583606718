"""A fake Zendesk Help Center (API token auth), its payloads shaped as Zendesk documents them,
and the webhook calls Zendesk would send (signed as Zendesk signs them)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

EMAIL, TOKEN = "agent@acme.example", "zd-token-7"
WEBHOOK_SECRET = "dGhpcyBpcyBhIGZha2Ugc2lnbmluZyBzZWNyZXQ="


@dataclass
class FakeArticle:
    id: int
    section_id: int
    title: str
    body: str | None
    updated: datetime | None = None  # None: a time in January 2026, one minute per id
    draft: bool = False
    locale: str = "en-us"
    user_segment_id: int | None = None
    labels: list[str] = field(default_factory=list)
    author_id: int = 3100


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeZendesk(LocalServer):
    """Categories, sections and articles. `archive`/`delete` make an article vanish from the
    export and answer 404; `broken` articles answer 500; `faults` are served first."""

    def __init__(self, page_size: int = 1000) -> None:
        super().__init__()
        self.page_size = page_size
        self.categories: dict[int, str] = {}
        self.sections: dict[int, tuple[str, int]] = {}  # id -> (name, category id)
        self.articles: dict[int, FakeArticle] = {}
        self.broken: set[int] = set()
        self.faults: deque[Fault] = deque()
        self.requests: list[str] = []
        r = self.app.router
        for path in ("/api/v2/help_center/incremental/articles",
                     "/api/v2/help_center/incremental/articles.json"):
            r.add_get(path, self._export)
        r.add_get("/api/v2/help_center/articles/{id}", self._article)
        r.add_get("/api/v2/help_center/sections", self._listing("sections"))
        r.add_get("/api/v2/help_center/categories", self._listing("categories"))

    def put(self, article: FakeArticle) -> None:
        if article.updated is None:
            article.updated = datetime(2026, 1, 5, 9, 0, tzinfo=UTC) + timedelta(
                minutes=article.id)
        self.articles[article.id] = article

    def change(self, article_id: int, **changes: Any) -> None:
        """Edit an article now (the export orders and filters by this time)."""
        article = self.articles[article_id]
        for key, value in changes.items():
            setattr(article, key, value)
        # One change a second at most: the export pages by whole seconds (as Zendesk's does).
        latest = max((a.updated for a in self.articles.values() if a.updated), default=None)
        now = datetime.now(UTC).replace(microsecond=0)
        article.updated = max(now, latest + timedelta(seconds=1)) if latest else now

    def delete(self, article_id: int) -> None:
        del self.articles[article_id]

    def fetches(self, article_id: int) -> int:
        return sum(1 for r in self.requests if r.startswith(f"/api/v2/help_center/articles/"
                                                            f"{article_id}"))

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        pair = base64.b64encode(f"{EMAIL}/token:{TOKEN}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {pair}":
            return web.json_response({"error": "Couldn't authenticate you"}, status=401)
        for fault in list(self.faults):
            if request.path.startswith(fault.path):
                self.faults.remove(fault)
                return web.Response(status=fault.status, text=fault.body, headers=fault.headers,
                                    content_type="application/json")
        return None

    def _json(self, article: FakeArticle) -> dict[str, Any]:
        assert article.updated is not None
        base = self.url + "/api/v2/help_center/en-us"
        slug = article.title.replace(" ", "-")
        return {
            "id": article.id, "url": f"{base}/articles/{article.id}.json",
            "html_url": f"{self.url}/hc/{article.locale}/articles/{article.id}-{slug}",
            "author_id": article.author_id, "comments_disabled": False,
            "draft": article.draft, "promoted": False, "position": 0, "vote_sum": 0,
            "vote_count": 0, "section_id": article.section_id,
            "created_at": "2025-12-01T08:00:00Z", "updated_at": _stamp(article.updated),
            "edited_at": _stamp(article.updated), "name": article.title,
            "title": article.title, "source_locale": "en-us", "locale": article.locale,
            "outdated": False, "outdated_locales": [],
            "user_segment_id": article.user_segment_id, "permission_group_id": 4400,
            "content_tag_ids": [], "label_names": list(article.labels), "body": article.body,
        }

    async def _export(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        start = int(request.query["start_time"])
        stamps = {a.id: a.updated.timestamp() for a in self.articles.values() if a.updated}
        rows = sorted((a for a in self.articles.values() if stamps[a.id] >= start),
                      key=lambda a: (stamps[a.id], a.id))[:self.page_size]
        end = int(stamps[rows[-1].id]) if rows else start
        more = len(rows) == self.page_size
        follow = (f"{self.url}/api/v2/help_center/incremental/articles.json?start_time={end}"
                  if more else None)
        return web.json_response({"articles": [self._json(a) for a in rows],
                                  "next_page": follow, "end_time": end, "count": len(rows)})

    async def _article(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        article_id = int(request.match_info["id"].removesuffix(".json"))
        if article_id in self.broken:
            return web.json_response({"error": "InternalError"}, status=500)
        article = self.articles.get(article_id)
        if article is None:
            return web.json_response({"error": "RecordNotFound", "description": "Not found"},
                                     status=404)
        return web.json_response({"article": self._json(article)})

    def _listing(self, key: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            if (refused := self._gate(request)) is not None:
                return refused
            if key == "categories":
                rows = [{"id": i, "name": n, "locale": "en-us", "position": 0}
                        for i, n in self.categories.items()]
            else:
                rows = [{"id": i, "name": n, "category_id": c, "locale": "en-us",
                         "parent_section_id": None, "position": 0}
                        for i, (n, c) in self.sections.items()]
            return web.json_response({key: rows, "page": 1, "previous_page": None,
                                      "next_page": None, "per_page": 100, "page_count": 1,
                                      "count": len(rows), "sort_by": "position",
                                      "sort_order": "asc"})

        return handler


_EVENTS = itertools.count(1)


def article_event(kind: str, article_id: int, when: datetime | None = None) -> bytes:
    """The JSON of a Help Center article event, as Zendesk's webhook event reference shows;
    each event has an id of its own (a ULID), as Zendesk's do."""
    event_id = f"01GX7773HNJ9CA89HX{next(_EVENTS):08d}"
    return json.dumps({
        "account_id": 11896485, "detail": {"brand_id": "4883147156990", "id": str(article_id),
                                          "user_id": "262066642"},
        "event": {}, "id": event_id, "subject": f"zen:article:{article_id}",
        "time": _stamp(when or datetime.now(UTC)), "type": f"zen:event-type:article.{kind}",
        "zendesk_event_version": "2022-11-06"}).encode()


def signed(body: bytes, *, secret: str = WEBHOOK_SECRET,
           when: datetime | None = None) -> dict[str, str]:
    """The headers Zendesk adds: base64(HMAC-SHA256(secret, timestamp + body))."""
    stamp = _stamp(when or datetime.now(UTC))
    digest = hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()
    return {"X-Zendesk-Webhook-Signature": base64.b64encode(digest).decode(),
            "X-Zendesk-Webhook-Signature-Timestamp": stamp,
            "Content-Type": "application/json"}
