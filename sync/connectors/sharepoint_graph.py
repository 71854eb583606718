"""Microsoft Graph for the SharePoint connector: drive deltas, permissions, files, site pages."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from rag.errors import SyncError
from sync.connectors.common.http_client import JsonClient, TooLarge, decode_json
from sync.connectors.common.microsoft import on_graph

log = logging.getLogger(__name__)
MISSING = frozenset({403, 404})  # an item this app may not read, or gone since the listing
GONE = frozenset({410})  # a delta token the service no longer honours


@dataclass(frozen=True)
class DriveItem:
    """One entry of a drive's delta, in the shape the connector maps to a document."""

    drive: str
    id: str
    name: str
    url: str = ""
    size: int = 0
    modified: str = ""
    authors: tuple[str, ...] = ()
    deleted: bool = False
    is_file: bool = False


@dataclass(frozen=True)
class Delta:
    items: list[DriveItem]  # the last occurrence of each item, in listing order
    link: str  # the deltaLink for the next run
    from_scratch: bool  # a listing of every current item, not changes since a token


def _get(item: Any, *path: str) -> Any:
    for key in path:
        item = item.get(key) if isinstance(item, dict) else None
    return item


def authors(raw: Any) -> tuple[str, ...]:
    names = (_get(raw, "createdBy", "user", "displayName"),
             _get(raw, "lastModifiedBy", "user", "displayName"))
    return tuple(dict.fromkeys(str(n) for n in names if n))


def drive_item(drive: str, raw: dict[str, Any]) -> DriveItem:
    return DriveItem(drive, str(raw.get("id") or ""), str(raw.get("name") or ""),
                     str(raw.get("webUrl") or ""), int(raw.get("size") or 0),
                     str(raw.get("lastModifiedDateTime") or ""), authors(raw),
                     raw.get("deleted") is not None, isinstance(raw.get("file"), dict))


class GraphApi:
    """`base` is Graph's versioned root (https://graph.microsoft.com/v1.0/); every link the
    service hands back (next, delta, Location) must stay on it: the token goes with them."""

    def __init__(self, api: JsonClient, base: str, label: str) -> None:
        self.api, self.base, self.label = api, base, label

    def _own(self, link: str) -> str:
        return on_graph(link, self.base, self.label)

    async def _values(self, url: str, params: dict[str, Any] | None = None
                      ) -> AsyncIterator[dict[str, Any]]:
        while url:
            body = decode_json(await self.api.get(url, params))
            for raw in body.get("value") or () if isinstance(body, dict) else ():
                if isinstance(raw, dict):
                    yield raw
            follow = _get(body, "@odata.nextLink")
            url, params = (self._own(str(follow)) if follow else ""), None

    async def site_drives(self, site: str) -> list[str]:
        return [str(d["id"]) async for d in self._values(f"sites/{site}/drives") if d.get("id")]

    async def delta(self, drive: str, link: str | None) -> Delta:
        """Every change since `link` (None: every item). A 410 restarts from scratch, at the
        fresh link the service names in `Location` when it names one."""
        start = f"drives/{drive}/root/delta"
        url, from_scratch = (self._own(link) if link else start), link is None
        found: dict[str, DriveItem] = {}
        while True:
            response = await self.api.get(url, accept=GONE)
            if response.status_code in GONE:
                if from_scratch:
                    raise SyncError(f"delta of drive {drive} answered 410 from scratch",
                                    user_message=f"{self.label}: Graph refused to list drive "
                                    f"{drive} even from scratch (HTTP 410).")
                code = str(_get(_safe_json(response), "error", "code") or "")
                log.warning("drive %s: delta token refused (410 %s); listing from scratch",
                            drive, code)
                location = response.headers.get("location")
                url, from_scratch, found = (self._own(location) if location else start,
                                            True, {})
                continue
            body = decode_json(response)
            for raw in body.get("value") or () if isinstance(body, dict) else ():
                if isinstance(raw, dict) and raw.get("id"):
                    found.pop(str(raw["id"]), None)  # the same item may appear twice: last wins
                    found[str(raw["id"])] = drive_item(drive, raw)
            if _get(body, "@odata.nextLink"):
                url = self._own(str(body["@odata.nextLink"]))
                continue
            delta_link = _get(body, "@odata.deltaLink")
            if not delta_link:
                raise SyncError(f"delta of drive {drive} ended without a deltaLink",
                                user_message=f"{self.label}: Graph's delta listing of drive "
                                f"{drive} ended without a deltaLink.")
            return Delta(list(found.values()), self._own(str(delta_link)), from_scratch)

    async def item(self, drive: str, item_id: str) -> DriveItem | str | None:
        """One item as a delta would list it; None when it is gone, or why it is unreadable."""
        response = await self.api.get(f"drives/{drive}/items/{item_id}", accept=MISSING)
        if response.status_code == 404:
            return None
        if response.status_code in MISSING:
            return f"HTTP {response.status_code}"
        body = decode_json(response)
        return drive_item(drive, body) if isinstance(body, dict) else "not a JSON object"

    async def permissions(self, item: DriveItem) -> list[dict[str, Any]] | str:
        """The item's permissions, or why they cannot be read."""
        url = f"drives/{item.drive}/items/{item.id}/permissions"
        response = await self.api.get(url, accept=MISSING)
        if response.status_code in MISSING:
            return f"HTTP {response.status_code}"
        body = decode_json(response)
        found = [p for p in body.get("value") or () if isinstance(p, dict)]
        follow = _get(body, "@odata.nextLink")
        if follow:
            found += [p async for p in self._values(self._own(str(follow)))]
        return found

    async def content(self, item: DriveItem, max_bytes: int) -> bytes | str:
        """The file's bytes (Graph redirects to a pre-authenticated download URL), stopped
        past `max_bytes` whatever the listing said of its size."""
        try:
            response = await self.api.get(f"drives/{item.drive}/items/{item.id}/content",
                                          accept=MISSING, max_bytes=max_bytes)
        except TooLarge as exc:
            return f"it is {exc.user_message}, `sharepoint.max_file_mb`"
        if response.status_code in MISSING:
            return f"HTTP {response.status_code}"
        return response.content

    def pages(self, site: str) -> AsyncIterator[dict[str, Any]]:
        return self._values(f"sites/{site}/pages")

    async def page(self, site: str, page_id: str) -> dict[str, Any] | str | None:
        """The page with its canvas; None when it is gone, or why it is unreadable."""
        response = await self.api.get(f"sites/{site}/pages/{page_id}/microsoft.graph.sitePage",
                                      {"$expand": "canvasLayout"}, accept=MISSING)
        if response.status_code == 404:
            return None
        if response.status_code in MISSING:
            return f"HTTP {response.status_code}"
        body = decode_json(response)
        return body if isinstance(body, dict) else "not a JSON object"


def _safe_json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def canvas_html(page: dict[str, Any]) -> str:
    """The text web parts of a modern page, in reading order, as one HTML fragment."""
    layout = page.get("canvasLayout") or {}
    parts: list[str] = []
    for section in layout.get("horizontalSections") or ():
        for column in _get(section, "columns") or ():
            parts += _texts(_get(column, "webparts"))
    parts += _texts(_get(layout, "verticalSection", "webparts"))
    return "\n".join(parts)


def _texts(webparts: Any) -> list[str]:
    return [str(w["innerHtml"]) for w in webparts or ()
            if isinstance(w, dict) and w.get("innerHtml")]


def access_of(permissions: list[dict[str, Any]]) -> tuple[str, ...]:
    """Who may open the item, as principals. A sharing link for the whole organisation (or
    for anyone) makes it `public`; other links and grants name their site groups, Entra
    groups and users. Nothing recognisable: () (nobody), never public by accident."""
    found: list[str] = []
    for perm in permissions:
        if _get(perm, "link", "scope") in ("organization", "anonymous"):
            return ("public",)
        grants = [perm.get("grantedToV2") or perm.get("grantedTo"),
                  *(perm.get("grantedToIdentitiesV2") or perm.get("grantedToIdentities") or ())]
        for grant in grants:
            found += _principals(grant)
    return tuple(dict.fromkeys(found))


def _principals(grant: Any) -> list[str]:
    if not isinstance(grant, dict):
        return []
    if _get(grant, "siteGroup", "displayName"):
        return [f"sharepoint:group:{grant['siteGroup']['displayName']}"]
    if _get(grant, "group", "id"):  # Entra object ids, as bot/permissions' entra_groups
        return [f"entra:group:{str(grant['group']['id']).lower()}"]
    if _get(grant, "user", "id"):
        return [f"entra:user:{str(grant['user']['id']).lower()}"]
    return []
