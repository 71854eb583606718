"""A local documentation website: pages under /docs/, sitemaps, robots.txt, ETags, redirects."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from aiohttp import web

from tests.fakes.http import LocalServer

NAV = '<nav><a href="/docs/">Docs home</a> <a href="/blog/">Blog</a></nav>'
FOOTER = "<footer>Copyright ACME Corp. All rights reserved. Imprint and privacy.</footer>"


@dataclass
class SitePage:
    title: str
    text: str
    links: tuple[str, ...] = ()
    modified: datetime = datetime(2026, 1, 5, 12, tzinfo=UTC)

    def html(self) -> str:
        anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in self.links)
        return (f"<!DOCTYPE html><html><head><title>{self.title} | ACME Docs</title></head>"
                f"<body>{NAV}<main><article><h1>{self.title}</h1><p>{self.text}</p>"
                f"<ul>{anchors}</ul></article></main>{FOOTER}</body></html>")


class FakeSite(LocalServer):
    """Serves `pages` by path; `redirects` map a path to a Location; sitemap.xml is a nested
    index of the pages under /docs/. Counts 200s and 304s per path. `large` pages are HTML of
    the given size, declared in Content-Length or (chunked) not; `sent` counts what went out."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: dict[str, SitePage] = {}
        self.redirects: dict[str, str] = {}
        self.robots = "User-agent: *\nDisallow: /docs/private/\n"
        self.served: list[tuple[str, int]] = []
        self.large: dict[str, tuple[int, bool]] = {}  # path -> (bytes, chunked)
        self.sent: dict[str, int] = {}
        self.missing_status = 404  # what a path with no page answers (410: gone for good)
        self.app.router.add_get("/robots.txt", self._robots)
        self.app.router.add_get("/sitemap.xml", self._index)
        self.app.router.add_get("/sitemaps/docs.xml", self._urlset)
        self.app.router.add_get("/{path:.*}", self._page)

    def ok(self, path: str) -> int:
        return sum(1 for p, status in self.served if p == path and status == 200)

    async def _robots(self, request: web.Request) -> web.Response:
        return web.Response(text=self.robots)

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(content_type="application/xml", text=(
            '<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9"><sitemap><loc>{self.url}/sitemaps/docs.xml</loc>'
            "<lastmod>2026-01-05</lastmod></sitemap></sitemapindex>"))

    async def _urlset(self, request: web.Request) -> web.Response:
        rows = "".join(f"<url><loc>{self.url}{path}</loc><lastmod>"
                       f"{page.modified.isoformat()}</lastmod></url>"
                       for path, page in sorted(self.pages.items()))
        return web.Response(content_type="application/xml", text=(
            '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9">{rows}</urlset>'))

    async def _page(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path in self.large:
            return await self._large(request, *self.large[path])
        if path in self.redirects:
            self.served.append((path, 301))
            return web.Response(status=301, headers={"Location": self.redirects[path]})
        page = self.pages.get(path)
        if page is None:
            self.served.append((path, self.missing_status))
            return web.Response(status=self.missing_status, text="not found")
        html = page.html()
        etag = '"' + hashlib.sha256(html.encode()).hexdigest()[:16] + '"'
        since = request.headers.get("If-Modified-Since")
        fresh = request.headers.get("If-None-Match") == etag or (
            since is not None and parsedate_to_datetime(since) >= page.modified)
        headers = {"ETag": etag, "Last-Modified": format_datetime(page.modified, usegmt=True)}
        if fresh:
            self.served.append((path, 304))
            return web.Response(status=304, headers=headers)
        self.served.append((path, 200))
        return web.Response(text=html, content_type="text/html", headers=headers)

    async def _large(self, request: web.Request, size: int, chunked: bool) -> web.StreamResponse:
        self.served.append((request.path, 200))
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        if chunked:
            response.enable_chunked_encoding()
        else:
            response.content_length = size
        await response.prepare(request)
        part = b"<p>" + b"x" * 65_529 + b"</p>"
        self.sent[request.path] = 0
        try:
            while self.sent[request.path] < size:
                await response.write(part)
                self.sent[request.path] += len(part)
        except (ConnectionError, RuntimeError):  # the reader went away: that is the point
            return response
        await response.write_eof()
        return response
