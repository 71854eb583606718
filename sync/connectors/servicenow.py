"""The ServiceNow Knowledge connector: published articles of chosen knowledge bases, their
categories as tags, their "can read" user criteria as access."""

from __future__ import annotations

import base64
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
from pydantic import Field

from rag.errors import ConfigError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import DocumentParseError, as_datetime, html_to_markdown
from sync.connectors.common.oauth import RenewingToken, fetch_token
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.servicenow_access import Directory, article_access, ids
from sync.connectors.servicenow_api import TableApi, any_of

FIELDS = ("sys_id,number,short_description,text,kb_knowledge_base,kb_category,sys_updated_on,"
          "published,author.name,can_read_user_criteria,cannot_read_user_criteria")
CRITERION = "sys_id,name,active,user,group,role,department,company,location,match_all,advanced"
BATCH = 100  # articles whose user criteria are looked up together


class ServiceNowSettings(RetryKnobs):
    """The `[sources.servicenow]` table."""

    auth: Literal["basic", "oauth"] = "basic"
    username: str = ""  # basic: the integration user, whose password is the source's token
    client_id: str = ""  # oauth: the Application Registry entry; its secret is the token
    bases: list[str] = Field(default_factory=list)  # knowledge base titles
    public_bases: list[str] = Field(default_factory=list)  # criteria-less articles: public
    page_size: int = Field(100, ge=1, le=10000)


class ServiceNowConnector:
    """Articles by knowledge base through the Table API. The published numbers are one cheap
    listing, so every run removes articles retired, outdated by no newer version, or deleted."""

    cheap_ids = True

    def __init__(self, source: SourceConfig, settings: ServiceNowSettings) -> None:
        self.source = source
        self.settings = settings
        self.site = source.url.rstrip("/") + "/"
        self.label = f"Source '{source.name}' (ServiceNow)"

    def _auth(self, http: httpx.AsyncClient) -> httpx.Auth | None:
        s, secret = self.settings, self.source.token or ""
        if s.auth == "basic":
            pair = base64.b64encode(f"{s.username}:{secret}".encode()).decode()
            http.headers["Authorization"] = f"Basic {pair}"
            return None
        form = {"grant_type": "client_credentials", "client_id": s.client_id,
                "client_secret": secret}
        return RenewingToken(lambda _refused: fetch_token(
            http, f"{self.site}oauth_token.do", form, label=self.label,
            hint="the source's `token` and `servicenow.client_id`"))

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[TableApi]:
        s = self.settings
        hint = ("the source's `token` and `servicenow.username`" if s.auth == "basic"
                else "the OAuth client's roles")
        async with httpx.AsyncClient(base_url=self.site, timeout=s.timeout_s, headers={
                "Accept": "application/json", "User-Agent": "sift-sync"}) as http:
            if (auth := self._auth(http)) is not None:
                http.auth = auth
            yield TableApi(s.client(http, label=self.label, auth_hint=hint), s.page_size,
                           self.label)

    async def _bases(self, api: TableApi) -> dict[str, str]:
        """sys_id -> title of the configured bases this account can read."""
        rows = [r async for r in api.rows("kb_knowledge_base", any_of(
            "title", self.settings.bases), "sys_id,title")]
        return {str(r["sys_id"]): str(r.get("title") or "") for r in rows if r.get("sys_id")}

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        async with self._api() as api:
            bases = await self._bases(api)
            for title in self.settings.bases:
                if title not in bases.values():
                    yield DocumentFailure("", f"knowledge base {title!r}: not found, or the "
                                          "account may not read it; skipped")
            if not bases:
                return
            place = await Place.read(api, bases)
            recent = "" if since is None else "^sys_updated_onRELATIVEGE@minute@ago@" + str(
                math.ceil((datetime.now(UTC) - since).total_seconds() / 60) + 1)
            query = (f"{any_of('kb_knowledge_base', bases)}^workflow_state=published{recent}"
                     "^ORDERBYsys_updated_on")
            batch: list[dict[str, Any]] = []
            async for row in api.rows("kb_knowledge", query, FIELDS):
                batch.append(row)
                if len(batch) == BATCH:
                    for item in await self._batch(api, place, batch):
                        yield item
                    batch = []
            for item in await self._batch(api, place, batch):
                yield item

    async def list_ids(self) -> set[str]:
        async with self._api() as api:
            bases = await self._bases(api)
            if not bases:
                return set()
            query = f"{any_of('kb_knowledge_base', bases)}^workflow_state=published"
            return {str(r["number"]) async for r in api.rows("kb_knowledge", query, "number")
                    if r.get("number")}

    async def _batch(self, api: TableApi, place: Place,
                     rows: list[dict[str, Any]]) -> list[Fetched]:
        await place.learn(api, [c for r in rows for key in ("can_read_user_criteria",
                                                              "cannot_read_user_criteria")
                                for c in ids(r.get(key))])
        return [self._document(row, place) for row in rows]

    def _document(self, row: dict[str, Any], place: Place) -> Fetched:
        number = str(row.get("number") or "")
        title = str(row.get("short_description") or number)
        try:
            text = row.get("text")
            if not isinstance(text, str) or not text.strip():
                raise DocumentParseError("the article has no HTML text")
            body = html_to_markdown(text).body
            updated = as_datetime(str(row.get("sys_updated_on") or "").replace(" ", "T"),
                                  "sys_updated_on")
            published = as_datetime(row.get("published"), "published")
        except DocumentParseError as exc:
            return DocumentFailure(number, f"article {number} ({title}): {exc}")
        base = str(row.get("kb_knowledge_base") or "")
        access, warnings = place.access(row, base, self.settings.public_bases)
        author = str(row.get("author.name") or "")
        return SourceDocument(
            doc_id=number, title=title, body=f"# {title}\n\n{body}",
            url=f"{self.site}kb_view.do?sysparm_article={number}", doc_type="article",
            tags=place.categories(str(row.get("kb_category") or "")),
            subtype=place.bases.get(base, ""), authors=(author,) if author else (),
            published_at=published, updated_at=updated, access=access, warnings=warnings)


class Place:
    """What a run learns once: category paths, each base's criteria, criteria by id."""

    def __init__(self, bases: dict[str, str], parents: dict[str, tuple[str, str]],
                 can: dict[str, list[str]], cannot: dict[str, list[str]]) -> None:
        self.bases, self.parents, self.can, self.cannot = bases, parents, can, cannot
        self.directory = Directory({}, {}, {})

    @classmethod
    async def read(cls, api: TableApi, bases: dict[str, str]) -> Place:
        in_bases = any_of("kb_knowledge_base", bases)
        parents = {str(r["sys_id"]): (str(r.get("label") or ""), str(r.get("parent_id") or ""))
                   async for r in api.rows("kb_category", in_bases, "sys_id,label,parent_id")}
        grants: list[dict[str, list[str]]] = [{}, {}]
        for table, found in (("kb_uc_can_read_mtom", grants[0]),
                             ("kb_uc_cannot_read_mtom", grants[1])):
            async for r in api.rows(table, in_bases, "kb_knowledge_base,user_criteria"):
                found.setdefault(str(r.get("kb_knowledge_base")), []).append(
                    str(r.get("user_criteria")))
        place = cls(bases, parents, *grants)
        await place.learn(api, [c for rows in grants for v in rows.values() for c in v])
        return place

    async def learn(self, api: TableApi, criteria: Sequence[str]) -> None:
        d = self.directory
        new = [c for c in criteria if c not in d.criteria]
        rows = {**d.criteria, **await api.by_id("user_criteria", new, CRITERION)} if new else \
            dict(d.criteria)
        group_ids = {g for r in rows.values() for g in ids(r.get("group"))} - set(d.groups)
        role_ids = {g for r in rows.values() for g in ids(r.get("role"))} - set(d.roles)
        groups = {k: str(v.get("name")) for k, v in (await api.by_id(
            "sys_user_group", group_ids, "sys_id,name")).items()} if group_ids else {}
        roles = {k: str(v.get("name")) for k, v in (await api.by_id(
            "sys_user_role", role_ids, "sys_id,name")).items()} if role_ids else {}
        self.directory = Directory(rows, {**d.groups, **groups}, {**d.roles, **roles})

    def categories(self, category: str) -> tuple[str, ...]:
        """The category's path from the top ("Network", "VPN"), as tags."""
        path: list[str] = []
        while category in self.parents and len(path) < 20:
            label, category = self.parents[category]
            path.insert(0, label)
        return tuple(p for p in path if p)

    def access(self, row: dict[str, Any], base: str,
               public: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        own = ids(row.get("can_read_user_criteria"))
        cannot = ids(row.get("cannot_read_user_criteria")) + tuple(self.cannot.get(base, ()))
        return article_access(own or tuple(self.can.get(base, ())), cannot,
                              self.bases.get(base) in public, self.bases.get(base, base),
                              self.directory)


def build(source: SourceConfig, settings: ServiceNowSettings) -> ServiceNowConnector:
    needed = [(source.url, "url", "the instance, e.g. https://acme.service-now.com"),
              (source.token, "token", "the integration user's password or the OAuth client "
               "secret"), (settings.bases, "servicenow.bases", "knowledge base titles")]
    needed.append((settings.username, "servicenow.username", "the integration user")
                  if settings.auth == "basic" else
                  (settings.client_id, "servicenow.client_id", "the OAuth client's id"))
    for value, setting, what in needed:
        if not value:
            raise ConfigError(f"source {source.name} has no {setting}", user_message=f"Source "
                              f"'{source.name}' is servicenow but has no `{setting}` ({what}).")
    return ServiceNowConnector(source, settings)


SPEC = ConnectorSpec("servicenow", ServiceNowSettings, build, "ServiceNow Knowledge articles "
                     "by knowledge base")
