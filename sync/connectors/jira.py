"""The Jira connector: issues chosen by project and JQL, with comments; access from the
project's Browse grants or the issue's security level."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
from pydantic import Field, SecretStr

from rag.errors import ConfigError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
    SourceDocument,
)
from sync.connectors.common.convert import DocumentParseError, as_datetime, html_to_markdown
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.jira_access import Access, browse_access, configured_access, level_access
from sync.connectors.jira_adf import adf_to_markdown
from sync.connectors.jira_api import JiraApi, JqlRefused
from sync.connectors.jira_push import JiraReceiver
from sync.push import DEFAULT_TOLERANCE_S

KEY = re.compile(r"^[A-Z][A-Z0-9_]*-[0-9]+$")
PROJECT = re.compile(r"^[A-Z][A-Z0-9_]*$")
TT = re.compile(r"<(/?)tt>")


class JiraSettings(RetryKnobs):
    """The `[sources.jira]` table."""

    deployment: Literal["cloud", "datacenter"] = "cloud"
    email: str = ""  # Cloud: the account that owns the API token; empty: the token is a PAT
    projects: list[str] = Field(default_factory=list)  # project keys, each searched apart
    jql: str = ""  # narrows the projects' issues (or alone selects them): no ORDER BY
    # Readers of a project whose permission scheme the token may not read (it takes Jira
    # admin): its principals ("jira:group:it-staff"). Given, it is used instead of the scheme.
    project_access: dict[str, list[str]] = Field(default_factory=dict)
    page_size: int = Field(100, ge=1, le=100)
    webhook_secret: SecretStr | None = None  # the admin webhook's secret (push notifications)
    webhook_tolerance_s: float = Field(DEFAULT_TOLERANCE_S, gt=0)  # older signed times refused


class JiraConnector:
    """Each issue is one document: summary, description and visible comments. Listing every
    key costs a few requests, so every run prunes what was deleted or left the query."""

    cheap_ids = True

    def __init__(self, source: SourceConfig, settings: JiraSettings) -> None:
        self.source = source
        self.settings = settings
        self.site = source.url.rstrip("/") + "/"
        self.label = f"Source '{source.name}' (Jira)"

    def _headers(self) -> dict[str, str]:
        token = self.source.token or ""
        if self.settings.email:  # Cloud API token: basic auth as the token's account
            auth = "Basic " + base64.b64encode(f"{self.settings.email}:{token}".encode()
                                               ).decode()
        else:  # Data Center personal access token
            auth = f"Bearer {token}"
        return {"Authorization": auth, "Accept": "application/json", "User-Agent": "sift-sync"}

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[JiraApi]:
        s = self.settings
        hint = "the source's `token` and `jira.email`" if s.email else "the source's `token`"
        async with httpx.AsyncClient(base_url=self.site, headers=self._headers(),
                                     timeout=s.timeout_s) as http:
            client = s.client(http, label=self.label, auth_hint=hint)
            yield JiraApi(client, s.deployment == "cloud", s.page_size, self.label)

    def _queries(self) -> list[tuple[str, str]]:
        """(what it is called in a report, JQL): one per project, or the source's JQL."""
        narrow = f" AND ({self.settings.jql})" if self.settings.jql else ""
        if self.settings.projects:
            return [(f"project {p}", f'project = "{p}"{narrow}') for p in self.settings.projects]
        return [("`jira.jql`", f"({self.settings.jql})")]

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        # Relative dates: JQL reads absolute ones in the token owner's time zone.
        recent = "" if since is None else (
            f" AND updated >= -{math.ceil((datetime.now(UTC) - since).total_seconds() / 60) + 1}m")
        async with self._api() as api:
            access = ProjectAccess(api, self.settings)
            for name, jql in self._queries():
                try:
                    async for issue in api.search(f"{jql}{recent} ORDER BY updated ASC"):
                        yield await self._document(api, issue, access)
                except JqlRefused as exc:
                    if not self.settings.projects:
                        raise
                    yield DocumentFailure("", f"{name}: {exc.user_message}; skipped")

    async def list_ids(self) -> set[str]:
        found: set[str] = set()
        async with self._api() as api:
            for _, jql in self._queries():
                try:
                    found |= {str(i["key"]) async for i in api.search(jql, fields="id")
                              if i.get("key")}
                except JqlRefused:
                    if not self.settings.projects:
                        raise
        return found

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Issues by key (a webhook named them): gone when deleted, out of the token's reach,
        or no longer matched by the source's projects and JQL."""
        async with self._api() as api:
            access = ProjectAccess(api, self.settings)
            scope = " OR ".join(f"({jql})" for _, jql in self._queries())
            for key in doc_ids:
                issue = await api.issue(key) if KEY.match(key) else None
                if issue is None or not [i async for i in api.search(
                        f"issuekey = {key} AND ({scope})", fields="id")]:
                    yield DocumentGone(key)
                    continue
                yield await self._document(api, issue, access)

    async def _document(self, api: JiraApi, issue: dict[str, Any],
                        access: ProjectAccess) -> Fetched:
        key = str(issue.get("key") or "")
        given = issue.get("fields")
        fields: dict[str, Any] = given if isinstance(given, dict) else {}
        summary = str(fields.get("summary") or key)
        try:
            rendered = issue.get("renderedFields")
            html = rendered.get("description") if isinstance(rendered, dict) else None
            body = self._body(fields, html, await api.comments(issue))
            updated = as_datetime(fields.get("updated"), "updated")
            created = as_datetime(fields.get("created"), "created")
        except DocumentParseError as exc:
            return DocumentFailure(key, f"issue {key} ({summary}): {exc}")
        project = str(_get(fields, "project", "key") or key.rpartition("-")[0])
        level = level_access(fields.get("security"))
        readers, warnings = (level, ()) if level else await access.of(project)
        names = [str(c.get("name")) for c in fields.get("components") or ()
                 if isinstance(c, dict) and c.get("name")]
        status = str(_get(fields, "status", "name") or "")
        return SourceDocument(
            doc_id=key, title=f"{key}: {summary}", body=f"# {key}: {summary}\n\n{body}",
            url=f"{self.site}browse/{key}", doc_type="issue",
            tags=tuple(dict.fromkeys(t for t in (key, status, *(str(x) for x in fields.get(
                "labels") or ()), *names) if t)),
            authors=tuple(a for a in (str(_get(fields, "reporter", "displayName") or ""),) if a),
            subtype=str(_get(fields, "issuetype", "name") or ""), published_at=created,
            updated_at=updated, access=readers, warnings=warnings)

    def _body(self, fields: dict[str, Any], html: Any, comments: list[Any]) -> str:
        parts = [self._markup(fields.get("description"), html, "description")]
        for comment in comments:
            if not isinstance(comment, dict) or comment.get("visibility"):
                continue  # a comment shown to one role or group only: not the issue's readers'
            who = str(_get(comment, "author", "displayName") or "someone")
            when = str(comment.get("created") or "")[:10]
            parts.append(f"## Comment by {who} ({when})\n\n" + self._markup(
                comment.get("body"), comment.get("renderedBody"), "a comment"))
        return "\n\n".join(p for p in parts if p.strip()) + "\n"

    def _markup(self, value: Any, html: Any, what: str) -> str:
        """Cloud: Atlassian Document Format. Data Center: wiki markup, as the HTML Jira
        rendered of it (the markup itself, as plain text, where Jira rendered none)."""
        if value is None:
            return ""
        if self.settings.deployment == "cloud":
            try:
                return adf_to_markdown(value)
            except DocumentParseError as exc:
                raise DocumentParseError(f"{what}: {exc}") from exc
        if not isinstance(value, str):
            raise DocumentParseError(f"{what} is not wiki markup text")
        if not isinstance(html, str):
            return value.strip()
        # Jira renders {{monospace}} as <tt>, which Markdown converters take for plain text.
        return html_to_markdown(TT.sub(r"<\1code>", html)).body.strip()


class ProjectAccess:
    """Each project's readers, read once per run."""

    def __init__(self, api: JiraApi, settings: JiraSettings) -> None:
        self.api, self.settings = api, settings
        self.known: dict[str, Access] = {}

    async def of(self, project: str) -> Access:
        if project not in self.known:
            given = self.settings.project_access
            if project in given:
                self.known[project] = configured_access(project, given, "")
            else:
                grants = await self.api.grants(project)
                self.known[project] = (configured_access(project, given, grants)
                                       if isinstance(grants, str)
                                       else browse_access(project, grants))
        return self.known[project]


def _get(item: Any, *path: str) -> Any:
    for key in path:
        item = item.get(key) if isinstance(item, dict) else None
    return item


def build(source: SourceConfig, settings: JiraSettings) -> JiraConnector:
    for value, setting, what in ((source.url, "url", "the site, e.g. https://acme.atlassian."
                                  "net"), (source.token, "token", "an API token or PAT")):
        if not value:
            raise ConfigError(f"source {source.name} has no {setting}", user_message=f"Source "
                              f"'{source.name}' is jira but has no `{setting}` ({what}).")
    if not settings.projects and not settings.jql:
        raise ConfigError(f"source {source.name} selects no issues", user_message=f"Source "
                          f"'{source.name}' is jira but sets neither `jira.projects` nor "
                          "`jira.jql`.")
    if re.search(r"\border\s+by\b", settings.jql, re.I):
        raise ConfigError(f"source {source.name}: jql has ORDER BY", user_message=f"Source "
                          f"'{source.name}': `jira.jql` may not end in ORDER BY (Sift orders "
                          "by update time itself).")
    bad = [p for p in settings.projects if not PROJECT.match(p)]
    if bad:
        raise ConfigError(f"source {source.name}: bad project keys {bad}", user_message=f"Source"
                          f" '{source.name}': `jira.projects` has {', '.join(bad)}, not project "
                          "keys (upper-case letters and digits, e.g. IT).")
    return JiraConnector(source, settings)


def push(source: SourceConfig, settings: JiraSettings) -> JiraReceiver:
    return JiraReceiver(settings.webhook_secret, settings.webhook_tolerance_s)


SPEC = ConnectorSpec("jira", JiraSettings, build, "Jira Cloud or Data Center issues by "
                     "project and JQL", push=push)
