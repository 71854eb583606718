"""Web pages and sitemaps: main content as Markdown, links, and sitemap.xml entries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urldefrag, urljoin

from bs4 import BeautifulSoup
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from sync.connectors.common.convert import (
    DocumentParseError,
    as_datetime,
    as_tuple,
    html_to_markdown,
)

_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass(frozen=True)
class Entry:
    url: str
    lastmod: datetime | None


@dataclass(frozen=True)
class Page:
    title: str
    body: str
    tags: tuple[str, ...]
    authors: tuple[str, ...]


def canonical(url: str) -> str:
    """The URL without its #fragment: one page, one id."""
    return urldefrag(url.strip())[0]


def sitemap_entries(data: bytes, url: str) -> tuple[list[str], list[Entry]]:
    """(child sitemaps of an index, pages of a urlset) of one sitemap document."""
    try:
        root = ElementTree.fromstring(data)
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise DocumentParseError(f"{url} is not a readable sitemap: {exc}") from exc
    locs = [(canonical(urljoin(url, (e.findtext(f"{_NS}loc") or "").strip())),
             e.findtext(f"{_NS}lastmod")) for e in root if (e.findtext(f"{_NS}loc") or "")]
    if root.tag == f"{_NS}sitemapindex":
        return [loc for loc, _ in locs], []
    pages = []
    for loc, lastmod in locs:
        try:
            when = as_datetime(lastmod.strip() if lastmod else None, "lastmod")
        except DocumentParseError:
            when = None  # a bad lastmod only costs a re-read
        pages.append(Entry(loc, when))
    return [], pages


def links(html: str, base: str) -> list[str]:
    """Every http(s) link of a page, absolute and without fragments, in page order."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for anchor in soup.find_all("a", href=True):
        url = canonical(urljoin(base, str(anchor["href"])))
        if url.startswith(("http://", "https://")) and url not in found:
            found.append(url)
    return found


def extract(html: str) -> Page:
    """The page's main content (navigation, sidebars and footers dropped) as Markdown."""
    import trafilatura  # heavy import, needed only by web sources

    body = trafilatura.extract(html, output_format="markdown", include_tables=True,
                               include_links=False, include_formatting=True,
                               favor_recall=True)
    meta = trafilatura.extract_metadata(html)
    if not body or not body.strip():
        body = html_to_markdown(html).body  # short pages trafilatura judges boilerplate
    if not body.strip():
        raise DocumentParseError("the page has no text")
    title = (meta.title if meta and meta.title else "") or html_to_markdown(
        html).meta.get("title", "")
    tags = as_tuple(meta.tags) if meta and meta.tags else ()
    authors = as_tuple(meta.author) if meta and meta.author else ()
    return Page(str(title), body.strip() + "\n", tags, authors)
