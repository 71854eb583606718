"""A fake Microsoft Graph for SharePoint: drive deltas, permissions, downloads, site pages."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.entra_server import TOKEN, FakeEntra
from tests.fakes.http import LocalServer

PAGE_SIZE = 2  # small pages, so that every listing follows @odata.nextLink


@dataclass
class FakeFile:
    """A file of a drive; `permissions` are Graph permission resources, as documented."""

    id: str
    name: str
    data: bytes
    permissions: list[dict[str, Any]] = field(default_factory=list)
    modified: str = "2026-01-05T10:00:00Z"
    size: int | None = None  # what Graph reports; None: len(data)


@dataclass
class FakePage:
    id: str
    title: str
    html: str
    modified: str = "2026-01-05T10:00:00Z"


def site_group(name: str, role: str = "read") -> dict[str, Any]:
    return {"id": f"sg-{name}", "roles": [role], "grantedToV2": {
        "siteGroup": {"id": "3", "displayName": name, "loginName": name}}}


def entra_group(object_id: str, name: str) -> dict[str, Any]:
    return {"id": f"g-{object_id}", "roles": ["read"], "grantedToV2": {
        "group": {"id": object_id, "displayName": name, "email": f"{name}@contoso.com"}}}


def org_link() -> dict[str, Any]:
    return {"id": "link-1", "roles": ["read"], "shareId": "!LKj1lkdlals90j1nlkascl",
            "expirationDateTime": "0001-01-01T00:00:00Z", "link": {
                "scope": "organization", "type": "view",
                "webUrl": "https://contoso.sharepoint.com/:w:/t/design/a577ghg9hgh737613bmbjf8"}}


def people_link(*users: tuple[str, str]) -> dict[str, Any]:
    return {"id": "link-2", "roles": ["write"], "link": {
        "scope": "users", "type": "edit",
        "webUrl": "https://contoso.sharepoint.com/:w:/t/design/a577ghg9hgh737613bmbjf839"},
        "grantedToIdentitiesV2": [{"user": {"id": uid, "displayName": name},
                                   "siteUser": {"id": "1", "displayName": name,
                                                "loginName": name}} for uid, name in users]}


class FakeSharePoint(LocalServer):
    """One tenant: `drives` of files, `sites` owning drives and pages. Every change is logged
    with a sequence number; a delta token is a position in that log. Tokens in `revoked`
    answer 410 Gone as Graph does (a Location header with a fresh start)."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, dict[str, FakeFile]] = {}  # drive -> id -> file
        self.sites: dict[str, list[str]] = {}  # site -> drive ids
        self.pages: dict[str, dict[str, FakePage]] = {}  # site -> id -> page
        self.log: list[tuple[int, str, str]] = []  # (seq, drive, item id)
        self.revoked: set[str] = set()
        self.entra = FakeEntra()  # the tenant's token service: each token it issues is ours
        self.entra.issue = self._issue
        self.unreadable: set[str] = set()  # item ids whose permissions answer 403
        self.requests: list[str] = []
        self.token, self.tokens_issued = TOKEN, 0
        self.expire_after: int | None = None  # authorised requests until the token expires
        self.on_expiry: Callable[[], None] = lambda: None  # e.g. the secret is revoked too
        self._seq = itertools.count(1)
        self._snapshots: dict[str, list[dict[str, Any]]] = {}
        r = self.app.router
        r.add_get("/v1.0/sites/{site}/drives", self._drives)
        r.add_get("/v1.0/drives/{drive}/root/delta", self._delta)
        r.add_get("/v1.0/drives/{drive}/items/{item}", self._get_item)
        r.add_get("/v1.0/drives/{drive}/items/{item}/permissions", self._permissions)
        r.add_get("/v1.0/drives/{drive}/items/{item}/content", self._content)
        r.add_get("/download/{drive}/{item}", self._download)
        r.add_get("/v1.0/sites/{site}/pages", self._pages)
        r.add_get("/v1.0/sites/{site}/pages/{page}/microsoft.graph.sitePage", self._page)

    @property
    def graph_url(self) -> str:
        return f"{self.url}/v1.0"

    @property
    def login_url(self) -> str:
        return self.entra.url

    @property
    def secret(self) -> str | None:
        return self.entra.secret

    @secret.setter
    def secret(self, value: str | None) -> None:
        self.entra.secret = value

    async def start(self) -> str:
        await self.entra.start()
        return await super().start()

    async def stop(self) -> None:
        await super().stop()
        await self.entra.stop()

    def put(self, drive: str, file: FakeFile) -> None:
        self.files.setdefault(drive, {})[file.id] = file
        self.log.append((next(self._seq), drive, file.id))

    def delete(self, drive: str, item: str) -> None:
        del self.files[drive][item]
        self.log.append((next(self._seq), drive, item))

    def put_page(self, site: str, page: FakePage) -> None:
        self.pages.setdefault(site, {})[page.id] = page

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"error": {"code": "InvalidAuthenticationToken",
                                                "message": "Access token has expired or is "
                                                "not yet valid."}}, status=401)
        if self.expire_after is not None:
            self.expire_after -= 1
            if self.expire_after <= 0:  # this request still passes; the next ones do not
                self.token, self.expire_after = f"{TOKEN}-renewed-{self.tokens_issued}", None
                self.on_expiry()
        return None

    def _issue(self) -> str:
        self.tokens_issued += 1
        return self.token

    async def _drives(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        site = request.match_info["site"]
        return web.json_response({"value": [
            {"id": d, "driveType": "documentLibrary", "name": "Documents",
             "webUrl": f"https://contoso.sharepoint.com/sites/{site}/Shared%20Documents"}
            for d in self.sites.get(site, [])]})

    def _item(self, drive: str, item_id: str) -> dict[str, Any]:
        file = self.files.get(drive, {}).get(item_id)
        if file is None:  # deleted: Graph keeps the id, the name and the deleted facet
            return {"id": item_id, "name": f"{item_id}.docx", "deleted": {"state": "deleted"},
                    "parentReference": {"driveId": drive, "driveType": "documentLibrary"}}
        user = {"user": {"displayName": "Megan Bowen", "email": "meganb@contoso.com"}}
        return {"id": file.id, "name": file.name, "size": len(file.data) if file.size is None
                else file.size, "webUrl": f"https://contoso.sharepoint.com/Docs/{file.name}",
                "createdDateTime": "2025-11-01T09:00:00Z",
                "lastModifiedDateTime": file.modified, "createdBy": user,
                "lastModifiedBy": user, "file": {"mimeType": "application/octet-stream",
                                                 "hashes": {"quickXorHash": "AAAA"}},
                "parentReference": {"driveId": drive, "driveType": "documentLibrary",
                                    "id": "root-id", "path": f"/drives/{drive}/root:"}}

    def _changes(self, drive: str, since: int) -> list[dict[str, Any]]:
        if since == 0:  # a first enumeration lists the root folder and every current item
            rows = [{"id": "root-id", "name": "root", "folder": {"childCount": 0},
                     "root": {}}]
            return rows + [self._item(drive, i) for i in self.files.get(drive, {})]
        changed = dict.fromkeys(i for seq, d, i in self.log if d == drive and seq > since)
        return [self._item(drive, i) for i in changed]

    async def _delta(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        drive, token = request.match_info["drive"], request.query.get("token", "")
        base = f"{self.graph_url}/drives/{drive}/root/delta"
        if token in self.revoked:
            return web.json_response(
                {"error": {"code": "resyncChangesApplyDifferences", "message":
                           "Resync required. Replace any local items with the server's "
                           "version (including deletes)."}}, status=410,
                headers={"Location": base})
        if token.startswith("page-"):  # a nextLink: the rest of a snapshot taken earlier
            key, offset = token[5:].rsplit("-", 1)
            rows, start = self._snapshots[key], int(offset)
        else:
            head = self.log[-1][0] if self.log else 0
            rows, start = self._changes(drive, int(token or 0)), 0
            key = f"{drive}.{head}.{len(self._snapshots)}"
            self._snapshots[key] = [*rows, {"@head": head}]
            rows = self._snapshots[key]
        page = rows[start:start + PAGE_SIZE]
        body: dict[str, Any] = {"value": [r for r in page if "@head" not in r]}
        if start + PAGE_SIZE < len(rows):
            body["@odata.nextLink"] = f"{base}?token=page-{key}-{start + PAGE_SIZE}"
        else:
            body["@odata.deltaLink"] = f"{base}?token={rows[-1]['@head']}"
        return web.json_response(body)

    async def _get_item(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        drive, item = request.match_info["drive"], request.match_info["item"]
        if item not in self.files.get(drive, {}):
            return web.json_response({"error": {"code": "itemNotFound", "message":
                                                "The resource could not be found."}}, status=404)
        if item in self.unreadable:
            return web.json_response({"error": {"code": "accessDenied", "message":
                                                "Access denied"}}, status=403)
        return web.json_response(self._item(drive, item))

    async def _permissions(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        drive, item = request.match_info["drive"], request.match_info["item"]
        file = self.files.get(drive, {}).get(item)
        if file is None:
            return web.json_response({"error": {"code": "itemNotFound"}}, status=404)
        if item in self.unreadable:
            return web.json_response({"error": {"code": "accessDenied", "message":
                                                "Access denied"}}, status=403)
        return web.json_response({"value": file.permissions})

    async def _content(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        drive, item = request.match_info["drive"], request.match_info["item"]
        if item not in self.files.get(drive, {}):
            return web.json_response({"error": {"code": "itemNotFound"}}, status=404)
        raise web.HTTPFound(f"{self.url}/download/{drive}/{item}?tempauth=pre-authenticated")

    async def _download(self, request: web.Request) -> web.Response:
        self.requests.append(request.path_qs)
        file = self.files.get(request.match_info["drive"], {}).get(request.match_info["item"])
        if file is None or request.query.get("tempauth") != "pre-authenticated":
            return web.Response(status=404)
        return web.Response(body=file.data, content_type="application/octet-stream")

    async def _pages(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        site = request.match_info["site"]
        return web.json_response({"value": [
            {"@odata.type": "#microsoft.graph.sitePage", "id": p.id, "name": f"{p.title}.aspx",
             "title": p.title, "lastModifiedDateTime": p.modified,
             "webUrl": f"SitePages/{p.title}.aspx", "pageLayout": "article",
             "publishingState": {"level": "published", "versionId": "1.0"}}
            for p in self.pages.get(site, {}).values()]})

    async def _page(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        page = self.pages.get(request.match_info["site"], {}).get(request.match_info["page"])
        if page is None:
            return web.json_response({"error": {"code": "itemNotFound"}}, status=404)
        user = {"user": {"displayName": "Rahul Mittal", "email": "rahmit@contoso.com"}}
        return web.json_response({
            "@odata.type": "#microsoft.graph.sitePage", "id": page.id, "title": page.title,
            "name": f"{page.title}.aspx", "lastModifiedDateTime": page.modified,
            "webUrl": f"https://contoso.sharepoint.com/SitePages/{page.title}.aspx",
            "createdBy": user, "lastModifiedBy": user, "pageLayout": "article",
            "publishingState": {"level": "published", "versionId": "1.0"},
            "canvasLayout": {"horizontalSections": [{"layout": "oneColumn", "id": "1",
                                                     "emphasis": "none", "columns": [{
                "id": "1", "width": 12, "webparts": [{
                    "@odata.type": "#microsoft.graph.textWebPart",
                    "id": "f6d0ef70-c977-45e4-ae4b-4676a30d5aab", "innerHtml": page.html}]}]}]}})
