"""The SharePoint / OneDrive connector: drive deltas and site pages through Microsoft Graph."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field, SecretStr

from rag.errors import ConfigError
from sync.connectors.base import (
    Checkpoint,
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import (
    DocumentParseError,
    Parsed,
    as_datetime,
    html_to_markdown,
)
from sync.connectors.common.entra import EntraApp, EntraNames, SourceToken
from sync.connectors.common.files import file_to_markdown
from sync.connectors.common.microsoft import GRAPH_URL, PUBLIC_CLOUD
from sync.connectors.common.oauth import RenewingToken
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.sharepoint_graph import (
    DriveItem,
    GraphApi,
    access_of,
    authors,
    canvas_html,
)
from sync.connectors.sharepoint_push import GraphReceiver

NAMES = EntraNames(tenant="`sharepoint.tenant_id`", client_id="`sharepoint.client_id`",
                   secret="the source's `token` (the client secret: expired?)",
                   certificate="`sharepoint.certificate_path` (and its `certificate_thumbprint`"
                   " or `certificate_password`; is the certificate uploaded to the app?)",
                   authority="`sharepoint.authority`")
TEXT = (".md", ".markdown", ".txt")
FILES = (".docx", ".pptx", ".xlsx", ".pdf", ".html", ".htm", *TEXT)
PAGE_OVERLAP = timedelta(minutes=5)  # clocks differ: pages edited near the cursor are re-read


class SharePointSettings(RetryKnobs):
    """The `[sources.sharepoint]` table; the source's `token` is the app's client secret, or
    `certificate_path` names the app's certificate instead (tenants that forbid secrets)."""

    tenant_id: str = ""
    client_id: str = ""  # the Entra app (the Teams bot's SIFT_TEAMS_APP_ID can be reused)
    authority: str = PUBLIC_CLOUD
    # A PEM file with the private key and the certificate (or the key alone and the SHA-1
    # `certificate_thumbprint` the portal shows), or a .pfx / .p12 file.
    certificate_path: Path | None = None
    certificate_thumbprint: str = ""
    certificate_password: SecretStr | None = None  # of an encrypted key or of the PFX
    sites: list[str] = Field(default_factory=list)  # site ids: every library and the pages
    drives: list[str] = Field(default_factory=list)  # drive ids: a library or a OneDrive
    pages: bool = True  # index the sites' modern pages
    public_pages: bool = False  # pages are `public`; else `sharepoint:site:<site id>`
    max_file_mb: float = Field(50.0, gt=0)
    timeout_s: float = Field(60.0, gt=0)
    client_state: SecretStr | None = None  # the Graph subscriptions' clientState (pushes)


class SharePointConnector:
    """Files of document libraries and OneDrives (delta links as the cursor) and site pages."""

    cheap_ids = False

    def __init__(self, source: SourceConfig, settings: SharePointSettings) -> None:
        self.source, self.settings = source, settings
        self.base = (source.url or GRAPH_URL).rstrip("/") + "/"
        self.label = f"Source '{source.name}' (SharePoint)"
        s = settings
        # One per connector, so its cached token serves every run until near expiry.
        self._token = SourceToken(EntraApp(
            s.tenant_id, s.client_id, SecretStr(source.token) if source.token else None,
            s.certificate_path, s.certificate_thumbprint, s.certificate_password, s.authority,
            s.timeout_s), NAMES, self.label)

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[GraphApi]:
        s = self.settings
        async with httpx.AsyncClient(base_url=self.base, timeout=s.timeout_s,
                                     follow_redirects=True) as http:
            http.auth = auth = RenewingToken(self._token)
            await auth.renew()  # wrong credentials stop the run before anything is read
            http.headers["User-Agent"] = "sift-sync"
            client = s.client(http, label=self.label,
                                auth_hint="that the app has Sites.Read.All / Files.Read.All "
                                "(application) with admin consent")
            yield GraphApi(client, self.base, self.label)

    async def _drives(self, api: GraphApi) -> list[str]:
        drives = list(self.settings.drives)
        for site in self.settings.sites:
            drives += [d for d in await api.site_drives(site) if d not in drives]
        return drives

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async for item in self.changes(None):
            if not isinstance(item, Checkpoint):
                yield item

    async def changes(self, cursor: str | None) -> AsyncIterator[Fetched | Checkpoint]:
        state = _load(cursor)
        links: dict[str, str] = state.get("drives") or {}
        started = datetime.now(UTC)
        notes: list[str] = []
        async with self._api() as api:
            complete = True
            for drive in await self._drives(api):
                delta = await api.delta(drive, links.get(drive))
                if links.get(drive) and delta.from_scratch:
                    notes.append(f"drive {drive}: Graph no longer honoured the stored delta "
                                 "token (HTTP 410); it was listed again from scratch")
                complete = complete and delta.from_scratch
                links[drive] = delta.link
                for item in delta.items:
                    fetched = await self._file(api, item)
                    if fetched is not None:
                        yield fetched
            since = None if complete else as_datetime(state.get("pages"), "pages")
            if self.settings.pages:
                for site in self.settings.sites:
                    async for page in self._pages(api, site, since):
                        yield page
        yield Checkpoint(json.dumps({"drives": links, "pages": started.isoformat()}),
                         complete=complete, warnings=tuple(notes))

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Chosen files and pages (a push named them). An id outside the configured sites and
        drives, or no longer a document there, is gone: nothing unconfigured gets indexed."""
        async with self._api() as api:
            drives = set(await self._drives(api))
            for doc_id in doc_ids:
                yield await self._fetch_one(api, drives, doc_id)

    async def _fetch_one(self, api: GraphApi, drives: set[str], doc_id: str) -> Fetched:
        if doc_id.startswith("page:"):
            site, _, page_id = doc_id[5:].rpartition(":")
            if not (self.settings.pages and site in self.settings.sites and page_id):
                return DocumentGone(doc_id)
            return await self._page(api, site, page_id)
        drive, _, item_id = doc_id.rpartition(":")
        found = await api.item(drive, item_id) if drive in drives and item_id else None
        if isinstance(found, str):
            return DocumentFailure(doc_id, f"file {doc_id}: cannot read it ({found}); skipped")
        fetched = await self._file(api, found) if found is not None else None
        return DocumentGone(doc_id) if fetched is None else fetched

    async def list_ids(self) -> set[str]:
        ids: set[str] = set()
        async with self._api() as api:
            for drive in await self._drives(api):
                delta = await api.delta(drive, None)
                ids |= {_doc_id(i) for i in delta.items if not i.deleted}
            if self.settings.pages:
                for site in self.settings.sites:
                    ids |= {f"page:{site}:{p['id']}" async for p in api.pages(site)
                            if p.get("id")}
        return ids

    async def _file(self, api: GraphApi, item: DriveItem) -> Fetched | None:
        doc_id = _doc_id(item)
        if item.deleted:
            return DocumentGone(doc_id)
        suffix = item.name[item.name.rfind("."):].lower() if "." in item.name else ""
        if not item.is_file or suffix not in FILES:
            return None  # folders, images, archives: not documents
        limit = self.settings.max_file_mb
        if item.size > limit * 2**20:
            return DocumentFailure(doc_id, f"file {item.name} ({item.url or doc_id}) is "
                                   f"{item.size / 2**20:.1f} MB, over the {limit:g} MB limit "
                                   "(`sharepoint.max_file_mb`): skipped")
        permissions = await api.permissions(item)
        data = (await api.content(item, int(limit * 2**20)) if isinstance(permissions, list)
                else b"")
        problem = permissions if isinstance(permissions, str) else data
        if isinstance(problem, str):
            return DocumentFailure(doc_id, f"file {item.name} ({item.url or doc_id}): cannot "
                                   f"read its permissions or content ({problem}); skipped")
        assert isinstance(permissions, list) and isinstance(data, bytes)
        try:
            parsed = (Parsed(data.decode("utf-8", errors="replace"), {}) if suffix in TEXT
                      else file_to_markdown(data, item.name))
            updated = as_datetime(item.modified, "lastModifiedDateTime")
        except DocumentParseError as exc:
            return DocumentFailure(doc_id, f"file {item.name} ({item.url or doc_id}): {exc}")
        return SourceDocument(
            doc_id=doc_id, title=item.name.rsplit(".", 1)[0] or item.name, body=parsed.body,
            url=item.url, authors=item.authors, doc_type="file", subtype=suffix.lstrip("."),
            updated_at=updated, access=access_of(permissions))

    async def _pages(self, api: GraphApi, site: str,
                     since: datetime | None) -> AsyncIterator[Fetched]:
        async for listed in api.pages(site):
            page_id = str(listed.get("id") or "")
            edited = _when(listed.get("lastModifiedDateTime"))
            if not page_id or (since is not None and edited is not None
                               and edited < since - PAGE_OVERLAP):
                continue
            yield await self._page(api, site, page_id)

    async def _page(self, api: GraphApi, site: str, page_id: str) -> Fetched:
        doc_id = f"page:{site}:{page_id}"
        page = await api.page(site, page_id)
        if page is None:  # deleted since it was listed, or since a push named it
            return DocumentGone(doc_id)
        if isinstance(page, str):
            return DocumentFailure(doc_id, f"page {page_id} of site {site}: cannot read it "
                                   f"({page}); skipped")
        title = str(page.get("title") or page.get("name") or page_id)
        try:
            body = html_to_markdown(canvas_html(page)).body.strip()
            updated = as_datetime(page.get("lastModifiedDateTime"), "lastModifiedDateTime")
        except DocumentParseError as exc:
            return DocumentFailure(doc_id, f"page {title} ({page_id}): {exc}")
        access = ("public",) if self.settings.public_pages else (f"sharepoint:site:{site}",)
        return SourceDocument(
            doc_id=doc_id, title=title, body=(body or title) + "\n",
            url=str(page.get("webUrl") or ""), authors=authors(page), doc_type="page",
            subtype="sitepage", updated_at=updated, access=access)


def _doc_id(item: DriveItem) -> str:
    return f"{item.drive}:{item.id}"


def _when(value: Any) -> datetime | None:
    try:
        return as_datetime(value)
    except DocumentParseError:
        return None


def _load(cursor: str | None) -> dict[str, Any]:
    """The stored cursor; one that cannot be read means a listing from scratch."""
    try:
        state = json.loads(cursor) if cursor else {}
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def build(source: SourceConfig, settings: SharePointSettings) -> SharePointConnector:
    needed = ((source.token or settings.certificate_path, "token",
               "the app's client secret, or `sharepoint.certificate_path`"),
              (settings.tenant_id, "sharepoint.tenant_id", "the directory (tenant) id"),
              (settings.client_id, "sharepoint.client_id", "the app (client) id"))
    for value, setting, what in needed:
        if not value:
            raise ConfigError(f"source {source.name} has no {setting}", user_message=f"Source "
                              f"'{source.name}' is sharepoint but has no `{setting}` ({what}).")
    path = settings.certificate_path
    if path is not None and not path.is_file():
        raise ConfigError(f"source {source.name} certificate {path}", user_message=f"Source "
                          f"'{source.name}': `sharepoint.certificate_path` names {path}, which "
                          "is not a file.")
    if not settings.sites and not settings.drives:
        raise ConfigError(f"source {source.name} names no site or drive", user_message=f"Source "
                          f"'{source.name}' is sharepoint but names no `sharepoint.sites` and "
                          "no `sharepoint.drives`: nothing to read.")
    return SharePointConnector(source, settings)


def push(source: SourceConfig, settings: SharePointSettings) -> GraphReceiver:
    return GraphReceiver(settings.client_state)


SPEC = ConnectorSpec("sharepoint", SharePointSettings, build, "SharePoint document libraries, "
                     "OneDrive and site pages through Microsoft Graph", push=push)
