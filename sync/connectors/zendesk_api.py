"""Zendesk Help Center reads: the incremental article export, one article, its sections."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from rag.errors import SyncError
from sync.connectors.common.http_client import JsonClient, decode_json, json_field

log = logging.getLogger(__name__)
EXPORT = "api/v2/help_center/incremental/articles"
GONE = frozenset({404, 410})
DENIED = frozenset({401, 403})


class Denied(SyncError):
    """The credentials were refused: the whole run stops, not just one article."""


@dataclass(frozen=True)
class Place:
    """Where an article sits: its section and that section's category, by name."""

    section: str = ""
    category: str = ""


class ZendeskApi:
    """One connector run's requests. Next-page links must stay on the help center's host:
    the credentials go with every request."""

    def __init__(self, api: JsonClient, site: str, label: str) -> None:
        self.api, self.site, self.label = api, site, label

    async def export(self, start_time: int) -> AsyncIterator[dict[str, Any]]:
        """Every article changed since `start_time` (epoch seconds), oldest change first.
        The export pages by time (`next_page` carries a later start_time), up to 1,000 a page."""
        url: str = EXPORT
        params: dict[str, Any] | None = {"start_time": start_time}
        followed: set[str] = set()
        yielded: set[str] = set()  # a page starts at the previous page's last change time
        while True:
            response = await self.api.get(url, params)
            body = decode_json(response)
            articles = body.get("articles") if isinstance(body, dict) else None
            if not isinstance(articles, list):
                raise SyncError(f"GET {response.url}: no 'articles' list",
                                user_message=f"{self.label} answered {response.url} without "
                                "an 'articles' list.")
            fresh = [a for a in articles
                     if isinstance(a, dict) and str(a.get("id")) not in yielded]
            for article in fresh:
                yielded.add(str(article.get("id")))
                yield article
            follow = body.get("next_page")
            if follow and articles and not fresh:  # the time-based pages cannot move past it
                log.warning("%s: a whole export page of articles changed in the same second "
                            "(%s); the export cannot page past them", self.label, response.url)
            if not follow or not fresh or follow in followed:
                return
            followed.add(follow)
            url, params = self._same_site(str(follow)), None

    async def article(self, article_id: str) -> dict[str, Any] | None:
        """One article as the API shows it now; None when deleted or archived (404/410)."""
        response = await self.api.get(f"api/v2/help_center/articles/{article_id}",
                                      accept=GONE | DENIED)
        if response.status_code in DENIED:
            raise Denied(f"GET {response.url} returned HTTP {response.status_code}",
                            user_message=f"{self.label} answered HTTP {response.status_code} "
                            "for an article (check the source's `token` and `zendesk.email`).")
        if response.status_code in GONE:
            return None
        found: dict[str, Any] = json_field(response, "article", dict, self.label)
        return found

    async def places(self) -> dict[str, Place]:
        """Section id -> its section and category names (sections and categories as tags)."""
        categories = {str(c.get("id")): str(c.get("name") or "")
                      async for c in self._listing("api/v2/help_center/categories",
                                                   "categories")}
        return {str(s.get("id")): Place(str(s.get("name") or ""),
                                        categories.get(str(s.get("category_id")), ""))
                async for s in self._listing("api/v2/help_center/sections", "sections")}

    async def _listing(self, url: str, key: str) -> AsyncIterator[dict[str, Any]]:
        params: dict[str, Any] | None = {"per_page": 100}
        followed: set[str] = set()
        while url:
            body = decode_json(await self.api.get(url, params))
            for item in body.get(key) or () if isinstance(body, dict) else ():
                if isinstance(item, dict):
                    yield item
            follow = body.get("next_page") if isinstance(body, dict) else None
            if not follow or follow in followed:
                return
            followed.add(follow)
            url, params = self._same_site(str(follow)), None

    def _same_site(self, url: str) -> str:
        base, target = httpx.URL(self.site), httpx.URL(url)
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
            raise SyncError(f"next page {url} leaves {self.site}", user_message=f"{self.label} "
                            f"sent a next-page link to another site ({target.host}); not "
                            "followed.")
        return url
