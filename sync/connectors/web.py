"""The website connector: a documentation site by sitemap.xml or by crawling under a path prefix."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from urllib.robotparser import RobotFileParser

import httpx
from pydantic import Field

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
from sync.connectors.common.http_client import JsonClient, TooLarge
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.web_pages import Entry, canonical, extract, links, sitemap_entries

AGENT = "sift-sync"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
GONE = frozenset({404, 410})  # the page was deleted: it leaves the index in this very run
KEEP = frozenset({304, 403}) | GONE | REDIRECTS


class WebSettings(RetryKnobs):
    """The `[sources.web]` table; the source's `url` is a start page or a sitemap.xml."""

    prefix: str = ""  # only URLs under this are read; default: the start URL's folder
    max_pages: int = Field(500, ge=1)
    delay_s: float = Field(0.5, ge=0)  # politeness: the pause between two requests
    max_retries: int = Field(3, ge=0)


@dataclass
class _Seen:
    etag: str
    links: tuple[str, ...]


class WebConnector:
    """Public pages (access `public`), the URL as id; a sitemap makes the id listing cheap."""

    def __init__(self, source: SourceConfig, settings: WebSettings) -> None:
        self.source, self.settings = source, settings
        self.start = canonical(source.url)
        self.sitemap = httpx.URL(self.start).path.endswith(".xml")
        folder = self.start.rsplit("/", 1)[0] + "/"
        self.prefix = settings.prefix or folder
        self.cheap_ids = self.sitemap
        self._seen: dict[str, _Seen] = {}  # validators and links from earlier runs
        self._listed: set[str] | None = None  # every URL of the last complete full pass

    def allowed(self, url: str) -> bool:
        return url.startswith(self.prefix)

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async with self._session() as (client, robots):
            found: set[str] = set()
            async for item in self._walk(client, robots, since, found):
                yield item
            self._listed = found if since is None else None

    async def list_ids(self) -> set[str]:
        if self._listed is not None:  # the full pass that just ran walked the whole site
            return set(self._listed)
        async with self._session() as (client, robots):
            if self.sitemap:
                return {e.url for e in await self._entries(client, robots)}
            found: set[str] = set()
            async for _ in self._walk(client, robots, None, found):
                pass
            return found

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[tuple[JsonClient, RobotFileParser]]:
        s = self.settings
        async with httpx.AsyncClient(headers={"User-Agent": AGENT}, timeout=s.timeout_s,
                                     follow_redirects=False) as http:
            client = s.client(http, label=f"Source '{self.source.name}' (website)")
            yield client, await self._robots(client)

    async def _robots(self, client: JsonClient) -> RobotFileParser:
        robots = RobotFileParser()
        url = httpx.URL(self.start).join("/robots.txt")
        response = await client.get(str(url), accept=frozenset({404, 410, 403}) | REDIRECTS)
        robots.parse(response.text.splitlines() if response.status_code == 200 else [])
        return robots

    async def _entries(self, client: JsonClient, robots: RobotFileParser) -> list[Entry]:
        entries: list[Entry] = []
        queue, done = [self.start], set[str]()
        while queue and len(done) < 100:  # nested indexes; a loop of them ends here
            url = queue.pop(0)
            done.add(url)
            response = await client.get(url)
            children, pages = sitemap_entries(response.content, url)
            queue += [c for c in children if c not in done]
            entries += [p for p in pages if self.allowed(p.url)
                        and robots.can_fetch(AGENT, p.url)]
        return entries[:self.settings.max_pages]

    async def _walk(self, client: JsonClient, robots: RobotFileParser, since: datetime | None,
                    found: set[str]) -> AsyncIterator[Fetched]:
        if self.sitemap:
            for entry in await self._entries(client, robots):
                found.add(entry.url)
                if since is None or entry.lastmod is None or entry.lastmod >= since:
                    item = await self._page(client, entry.url, since, entry.lastmod)
                    if isinstance(item, SourceDocument | DocumentFailure | DocumentGone):
                        yield item
            return
        queue, visited = [self.start], set[str]()
        while queue and len(visited) < self.settings.max_pages:
            url = queue.pop(0)
            if url in visited or not self.allowed(url) or not robots.can_fetch(AGENT, url):
                continue
            visited.add(url)
            item = await self._page(client, url, since, None)
            if isinstance(item, tuple):
                doc, more = item
                found.add(url)  # a page gone (404, redirected away) is not, so it is pruned
                queue += [u for u in more if u not in visited]
                if doc is not None:
                    yield doc
            elif item is not None:
                yield item

    async def _page(self, client: JsonClient, url: str, since: datetime | None,
                    lastmod: datetime | None) -> Fetched | tuple[Fetched | None, list[str]] | None:
        """One page: a document (crawls also get its links), a failure, or None if unchanged."""
        await asyncio.sleep(self.settings.delay_s)
        try:
            response, target = await self._fetch(client, url, since)
        except TooLarge as exc:
            return DocumentFailure(url, f"{url}: the page is {exc.user_message} "
                                   "(SIFT_SYNC__MAX_FILE_MB); skipped")
        if isinstance(response, str):
            return DocumentFailure("", f"{url}: {response}; not followed")
        seen = self._seen.get(url)
        if response.status_code == 304 and seen is not None:
            return None if self.sitemap else (None, list(seen.links))
        if response.status_code in GONE and url != self.start:
            return DocumentGone(url)
        if response.status_code >= 400 or response.status_code == 304:
            return DocumentFailure("", f"{url}: HTTP {response.status_code}; not read")
        found = [u for u in links(response.text, target) if self.allowed(u)]
        self._seen[url] = _Seen(response.headers.get("etag", ""), tuple(found))
        doc = self._document(url, response, lastmod)
        return doc if self.sitemap else (doc, found)

    async def _fetch(self, client: JsonClient, url: str,
                     since: datetime | None) -> tuple[httpx.Response | str, str]:
        """GET with validators, following redirects only while they stay under the prefix."""
        headers = {}
        seen = self._seen.get(url)
        if since is not None and seen is not None and seen.etag:  # a full pass reads all
            headers["If-None-Match"] = seen.etag
        if since is not None and (seen is not None or self.sitemap):
            headers["If-Modified-Since"] = format_datetime(since.astimezone(UTC), usegmt=True)
        target = url
        for _ in range(5):
            response = await client.get(target, headers=headers, accept=KEEP,
                                        max_bytes=self.source.max_file_bytes)
            if response.status_code not in REDIRECTS:
                return response, target
            target = canonical(str(response.url.join(response.headers.get("location", ""))))
            if not self.allowed(target):
                return f"redirects to {target}, outside {self.prefix}", target
        return "too many redirects", target

    def _document(self, url: str, response: httpx.Response,
                  lastmod: datetime | None) -> Fetched:
        try:
            page = extract(response.text)
            modified = response.headers.get("last-modified")
            updated = lastmod or (_http_date(modified) if modified else None)
        except DocumentParseError as exc:
            return DocumentFailure(url, f"{url}: {exc}")
        return SourceDocument(doc_id=url, title=page.title or url, body=page.body, url=url,
                              tags=page.tags, authors=page.authors, doc_type="web page",
                              updated_at=updated, access=self.source.default_access)


def _http_date(value: str) -> datetime | None:
    try:
        return parsedate_to_datetime(value).astimezone(UTC)
    except (TypeError, ValueError):
        return as_datetime(None)


def build(source: SourceConfig, settings: WebSettings) -> WebConnector:
    if not source.url.startswith(("http://", "https://")):
        raise ConfigError(f"source {source.name} has no http(s) url", user_message=f"Source "
                          f"'{source.name}' is web but its `url` is not an http(s) start page "
                          "or sitemap.xml.")
    return WebConnector(source, settings)


SPEC = ConnectorSpec("web", WebSettings, build, "a website by sitemap.xml or by crawling")
