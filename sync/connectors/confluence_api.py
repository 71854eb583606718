"""Confluence listings: Cloud REST v2 (cursor `_links.next`), Data Center v1 (start/limit)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin

import httpx

from rag.errors import SyncError
from sync.connectors.common.http_client import JsonClient, decode_json

MISSING = frozenset({403, 404})  # a space or page this token may not read: skip, keep going
ID_PAGE = 250  # Cloud v2 listings' largest `limit`


@dataclass(frozen=True)
class Space:
    key: str
    id: str = ""  # Cloud's numeric id; Data Center addresses spaces by key


@dataclass(frozen=True)
class Page:
    """One page in the platform-neutral shape the connector maps to a document."""

    id: str
    title: str
    space: str
    updated: str
    url: str
    body: str | None  # storage format; None when the listing asked for ids only
    authors: tuple[str, ...] = ()
    labels: tuple[str, ...] | None = None  # None: Cloud lists them per page
    readers: tuple[str, ...] | None = None  # read restrictions as principals; None: ask


def _get(item: Any, *path: str) -> Any:
    for key in path:
        item = item.get(key) if isinstance(item, dict) else None
    return item


def _names(items: Any, key: str) -> tuple[str, ...]:
    return tuple(str(i[key]) for i in items or () if isinstance(i, dict) and i.get(key))


def readers(restrictions: Any) -> tuple[str, ...]:
    """`restrictions.read.restrictions`-shaped JSON as principals; () when unrestricted."""
    groups = _names(_get(restrictions, "group", "results"), "name")
    users = _get(restrictions, "user", "results") or ()
    ids = _names(users, "accountId") or _names(users, "username")
    return (tuple(f"confluence:group:{g}" for g in groups)
            + tuple(f"confluence:user:{u}" for u in ids))


class CloudApi:
    """`<site>/wiki/api/v2`: spaces by key, each space's pages newest first."""

    def __init__(self, api: JsonClient, site: str, page_size: int) -> None:
        self.api, self.site, self.page_size = api, site, page_size

    async def _results(self, url: str, params: dict[str, Any]) -> AsyncIterator[Any]:
        while url:
            response = await self.api.get(url, params)
            body = decode_json(response)
            base = str(_get(body, "_links", "base") or "")
            for item in body.get("results") or () if isinstance(body, dict) else ():
                yield item, base
            follow = _get(body, "_links", "next")
            url, params = (same_site(self.site, urljoin(str(response.url), follow))
                           if follow else ""), {}

    async def spaces(self, keys: Sequence[str]) -> list[Space]:
        params: dict[str, Any] = {"limit": 250, **({"keys": ",".join(keys)} if keys else {})}
        return [Space(str(s["key"]), str(s["id"]))
                async for s, _ in self._results("api/v2/spaces", params)]

    async def pages(self, space: Space, since: datetime | None,
                    body: bool) -> AsyncIterator[Page]:
        # Without bodies a listing is ids and titles: the largest page the API allows.
        params: dict[str, Any] = {"limit": self.page_size if body else ID_PAGE,
                                  "sort": "-modified-date", "status": "current"}
        if body:
            params["body-format"] = "storage"
        async for item, base in self._results(f"api/v2/spaces/{space.id}/pages", params):
            updated = str(_get(item, "version", "createdAt") or "")
            if since is not None and updated and _stamp(updated) < since:
                return  # newest first: every later page is older still
            yield self._page(item, space, base, body)

    async def page(self, page_id: str, spaces: Sequence[Space]) -> Page | None:
        """One current page of these spaces, with its body; None when it is not (any more):
        deleted, trashed, moved to another space, or out of this token's reach."""
        response = await self.api.get(f"api/v2/pages/{page_id}", {"body-format": "storage"},
                                      accept=MISSING)
        item = None if response.status_code in MISSING else decode_json(response)
        space = next((s for s in spaces if isinstance(item, dict)
                      and s.id == str(item.get("spaceId"))), None)
        if space is None or not isinstance(item, dict) or item.get("status") != "current":
            return None
        base = str(_get(item, "_links", "base") or self.site.rstrip("/"))
        return self._page(item, space, base, body=True)

    @staticmethod
    def _page(item: Any, space: Space, base: str, body: bool) -> Page:
        storage = _get(item, "body", "storage", "value")
        return Page(str(item["id"]), str(item.get("title") or ""), space.key,
                    str(_get(item, "version", "createdAt") or ""),
                    base + str(_get(item, "_links", "webui") or ""),
                    storage if body and isinstance(storage, str) else None)

    async def details(self, page: Page) -> Page | str:
        """Labels and read restrictions of one page, or why they cannot be read."""
        labels = await self.api.get(f"api/v2/pages/{page.id}/labels", {"limit": 250},
                                    accept=MISSING)
        limits = await self.api.get(f"rest/api/content/{page.id}/restriction/byOperation/read",
                                    accept=MISSING)
        for response in (labels, limits):
            if response.status_code in MISSING:
                return f"HTTP {response.status_code} for {response.url}"
        names = _names(decode_json(labels).get("results"), "name")
        restricted = readers(_get(decode_json(limits), "restrictions"))
        return Page(**{**page.__dict__, "labels": names, "readers": restricted})


class DataCenterApi:
    """`<base>/rest/api`: CQL content search per space, `start`/`limit` pages."""

    EXPAND = ("body.storage,version,space,history,metadata.labels,"
              "restrictions.read.restrictions.group,restrictions.read.restrictions.user")

    def __init__(self, api: JsonClient, site: str, page_size: int) -> None:
        self.api, self.site, self.page_size = api, site, page_size

    async def spaces(self, keys: Sequence[str]) -> list[Space]:
        if keys:
            found = []
            for key in keys:
                response = await self.api.get(f"rest/api/space/{key}", accept=MISSING)
                if response.status_code not in MISSING:
                    found.append(Space(key))
            return found
        return [Space(str(s["key"])) async for s in self._search("rest/api/space", {})]

    async def _search(self, url: str, params: dict[str, Any]) -> AsyncIterator[Any]:
        start = 0
        while True:
            response = await self.api.get(url, {**params, "start": start,
                                                "limit": self.page_size})
            body = decode_json(response)
            results = body.get("results") or [] if isinstance(body, dict) else []
            for item in results:
                yield {**item, "_base": str(_get(body, "_links", "base") or self.site)}
            if not results or not _get(body, "_links", "next"):
                return
            start += len(results)

    async def pages(self, space: Space, since: datetime | None,
                    body: bool) -> AsyncIterator[Page]:
        cql = f'type=page and space="{space.key}"'
        if since is not None:
            cql += f' and lastmodified >= "{since.astimezone(UTC):%Y/%m/%d %H:%M}"'
        params = {"cql": cql + " order by lastmodified desc",
                  **({"expand": self.EXPAND} if body else {})}
        async for item in self._search("rest/api/content/search", params):
            yield self._page(item, space, body)

    async def page(self, page_id: str, spaces: Sequence[Space]) -> Page | None:
        """One current page of these spaces, expanded as the search expands it; else None."""
        response = await self.api.get(f"rest/api/content/{page_id}", {"expand": self.EXPAND},
                                      accept=MISSING)
        item = None if response.status_code in MISSING else decode_json(response)
        key = _get(item, "space", "key")
        space = next((s for s in spaces if s.key == key), None)
        if space is None or not isinstance(item, dict) or item.get("status") != "current":
            return None
        base = str(_get(item, "_links", "base") or self.site.rstrip("/"))
        return self._page({**item, "_base": base}, space, body=True)

    @staticmethod
    def _page(item: Any, space: Space, body: bool) -> Page:
        storage = _get(item, "body", "storage", "value")
        authors = tuple(dict.fromkeys(a for a in (
            _get(item, "history", "createdBy", "displayName"),
            _get(item, "version", "by", "displayName")) if a))
        return Page(str(item["id"]), str(item.get("title") or ""), space.key,
                    str(_get(item, "version", "when") or ""),
                    item["_base"] + str(_get(item, "_links", "webui") or ""),
                    storage if body and isinstance(storage, str) else None, authors,
                    _names(_get(item, "metadata", "labels", "results"), "name"),
                    readers(_get(item, "restrictions", "read", "restrictions")))

    async def details(self, page: Page) -> Page | str:
        return page  # the search expanded labels and restrictions already


def same_site(site: str, url: str) -> str:
    """Next links must stay on the site: the credentials go wherever we GET."""
    base, target = httpx.URL(site), httpx.URL(url)
    if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port):
        raise SyncError(f"next link {url} leaves {site}", user_message=f"Confluence sent a "
                        f"next-page link to another site ({target.host}); not followed.")
    return url


def _stamp(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
