"""The GitHub connector: documentation files of the default branch, Discussions (question and
accepted answer) and optionally issues, of chosen repositories or an organisation's."""

from __future__ import annotations

import base64
import fnmatch
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field, SecretStr

from rag.errors import ConfigError
from sync.connectors.base import (
    ConnectorSpec,
    DocumentFailure,
    DocumentGone,
    Fetched,
    SourceConfig,
)
from sync.connectors.common.oauth import RenewingToken
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.github_access import Readers
from sync.connectors.github_api import GitHubApi, Repo, throttled
from sync.connectors.github_auth import installation_token, read_key
from sync.connectors.github_docs import (
    Access,
    DocId,
    Selection,
    discussion_document,
    discussion_id,
    file_document,
    file_id,
    issue_document,
    issue_id,
    wiki_document,
    wiki_id,
)
from sync.connectors.github_push import GitHubReceiver
from sync.connectors.github_wiki import wiki_pages

API = "https://api.github.com"


class GitHubSettings(RetryKnobs):
    """The `[sources.github]` table."""

    repos: list[str] = Field(default_factory=list)  # "owner/name"
    org: str = ""  # every repository of this organisation the token can read, filtered:
    include: list[str] = Field(default_factory=lambda: ["*"])  # names, shell patterns
    exclude: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=lambda: ["/README.md", "/docs/**"])  # gitignore
    extensions: list[str] = Field(default_factory=lambda: [".md", ".markdown", ".mdx", ".txt",
                                                           ".rst"])
    discussions: bool = True
    issues: bool = False
    wiki: bool = False  # the wiki's pages, cloned with git (no API reads them)
    max_file_bytes: int = Field(2 * 2**20, gt=0)  # larger files are reported, not downloaded
    app_id: str = ""  # a GitHub App (its id or client id) instead of a token
    installation_id: int = Field(0, ge=0)
    private_key_file: Path | None = None
    graphql_url: str = ""  # empty: beside the REST API (…/api/graphql on Enterprise Server)
    max_wait_s: float = Field(900.0, gt=0)  # the hourly limit resets within the hour
    webhook_secret: SecretStr | None = None  # the webhook's secret (push notifications)


class GitHubConnector:
    """Documents of each repository: files by path, Discussions, issues if chosen. A run after
    the first reads only what changed: files from the commits since (one compare per
    repository), Discussions and issues by update time."""

    def __init__(self, source: SourceConfig, settings: GitHubSettings, pem: str = "") -> None:
        self.source, self.settings, self.pem = source, settings, pem
        self.site = (source.url or API).rstrip("/") + "/"
        self.label = f"Source '{source.name}' (GitHub)"
        self.selection = Selection(settings.paths, settings.extensions)
        self.cheap_ids = not settings.issues  # issues are listed 100 a request

    def _graphql(self) -> str:
        if self.settings.graphql_url:
            return self.settings.graphql_url
        root = self.site.rstrip("/")
        return root[:-len("/v3")] + "/graphql" if root.endswith("/api/v3") else root + "/graphql"

    @asynccontextmanager
    async def _api(self) -> AsyncIterator[GitHubApi]:
        s = self.settings
        headers = {"Accept": "application/vnd.github+json", "User-Agent": "sift-sync",
                   "X-GitHub-Api-Version": "2022-11-28"}
        async with httpx.AsyncClient(base_url=self.site, headers=headers,
                                     timeout=s.timeout_s) as http:
            token: Callable[[], Awaitable[str]]
            if s.app_id:
                renewing = RenewingToken(lambda _refused: installation_token(
                    http, s.app_id, s.installation_id, self.pem, self.label))
                http.auth, token = renewing, renewing.renew
                hint = "the app's permissions and its installation on the repositories"
            else:
                http.headers["Authorization"] = f"Bearer {self.source.token or ''}"
                token = self._token
                hint = "the source's `token` (a fine-grained token with Contents read)"
            client = s.client(http, label=self.label, auth_hint=hint, throttled=throttled)
            yield GitHubApi(client, self._graphql(), self.label, httpx.URL(self.site).host,
                            token)

    async def _token(self) -> str:
        return self.source.token or ""

    async def _wiki(self, api: GitHubApi, repo: Repo) -> dict[str, bytes]:
        if not (self.settings.wiki and repo.has_wiki):
            return {}
        pages = await wiki_pages(repo.html_url, await api.token(), self.settings.timeout_s,
                                 self.label)
        return pages or {}

    async def _names(self, api: GitHubApi) -> list[str]:
        s = self.settings
        if not s.org:
            return list(s.repos)
        names = await api.org_repos(s.org)
        return [n for n in names if any(fnmatch.fnmatch(n.split("/")[1], p) for p in s.include)
                and not any(fnmatch.fnmatch(n.split("/")[1], p) for p in s.exclude)]

    async def _repos(self, api: GitHubApi) -> AsyncIterator[Repo | DocumentFailure]:
        for name in await self._names(api):
            repo = await api.repo(name)
            yield repo if repo is not None else DocumentFailure("", (
                f"repository {name}: not found, or the token may not read it; skipped"))

    async def documents(self, since: datetime | None) -> AsyncIterator[Fetched]:
        stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if since else None
        async with self._api() as api:
            readers = Readers(api)
            async for repo in self._repos(api):
                if isinstance(repo, DocumentFailure):
                    yield repo
                    continue
                access = await readers.of(repo)
                async for item in self._files(api, repo, stamp, access):
                    yield item
                if self.settings.discussions and repo.has_discussions:
                    async for node in api.discussions(repo):
                        if stamp and str(node.get("updatedAt") or "") < stamp:
                            break  # newest first: the rest are older still
                        yield discussion_document(repo, node, access)
                if self.settings.issues and repo.has_issues:
                    async for issue in api.issues(repo, stamp):
                        yield issue_document(repo, issue, await api.comments(repo, issue),
                                             access)
                for path, data in (await self._wiki(api, repo)).items():  # every run: small
                    yield wiki_document(repo, path, data, access)

    async def _files(self, api: GitHubApi, repo: Repo, since: str | None,
                     access: Access) -> AsyncIterator[Fetched]:
        changed = await api.changed_files(repo, since) if since else None
        if changed is None:  # a full listing: the tree, with each blob's size
            entries = [(str(e["path"]), str(e["sha"]), e.get("size")) for e in
                       await api.tree(repo) if self.selection.matches(str(e.get("path")))]
        else:
            entries = []
            for f in changed:
                path, previous = str(f.get("filename") or ""), f.get("previous_filename")
                if previous and self.selection.matches(str(previous)):
                    yield DocumentGone(file_id(repo.full_name, str(previous)))
                if not self.selection.matches(path):
                    continue
                if f.get("status") == "removed":
                    yield DocumentGone(file_id(repo.full_name, path))
                else:
                    entries.append((path, str(f.get("sha")), None))
        for path, sha, size in entries:
            yield await self._file(api, repo, path, sha, size, access)

    async def _file(self, api: GitHubApi, repo: Repo, path: str, sha: str, size: Any,
                    access: Access, data: bytes | None = None) -> Fetched:
        limit = self.settings.max_file_bytes
        if isinstance(size, int) and size > limit:
            return DocumentFailure(file_id(repo.full_name, path), (
                f"{repo.full_name}/{path} is {size / 2**20:.1f} MB, over `github."
                f"max_file_bytes` ({limit / 2**20:g} MB): skipped"))
        return file_document(repo, path, data if data is not None else await api.blob(
            repo, sha), access)

    async def list_ids(self) -> set[str]:
        found: set[str] = set()
        async with self._api() as api:
            async for repo in self._repos(api):
                if isinstance(repo, DocumentFailure):
                    continue
                found |= {file_id(repo.full_name, str(e["path"])) for e in await api.tree(repo)
                          if self.selection.matches(str(e.get("path")))}
                if self.settings.discussions and repo.has_discussions:
                    found |= {discussion_id(repo.full_name, int(n["number"]))
                              async for n in api.discussions(repo, size=100)}
                if self.settings.issues and repo.has_issues:
                    found |= {issue_id(repo.full_name, int(i["number"]))
                              async for i in api.issues(repo, None)}
                found |= {wiki_id(repo.full_name, p) for p in await self._wiki(api, repo)}
        return found

    async def fetch(self, doc_ids: Sequence[str]) -> AsyncIterator[Fetched]:
        """Items a webhook named: gone when deleted, or no longer in the chosen repositories,
        paths or kinds."""
        async with self._api() as api:
            readers, allowed = Readers(api), set(await self._names(api))
            repos: dict[str, Repo | None] = {}
            for doc_id in doc_ids:
                parsed = DocId.parse(doc_id)
                if parsed is None or parsed.repo not in allowed:
                    yield DocumentGone(doc_id)
                    continue
                if parsed.repo not in repos:
                    repos[parsed.repo] = await api.repo(parsed.repo)
                repo = repos[parsed.repo]
                found = await self._one(api, repo, parsed, readers) if repo else None
                yield found if found is not None else DocumentGone(doc_id)

    async def _one(self, api: GitHubApi, repo: Repo, parsed: DocId,
                   readers: Readers) -> Fetched | None:
        access = await readers.of(repo)
        if parsed.kind == "file" and self.selection.matches(parsed.key):
            content = await api.content(repo, parsed.key)
            if content is None:
                return None
            inline = content.get("content") if content.get("encoding") == "base64" else None
            data = base64.b64decode(inline) if inline else None
            return await self._file(api, repo, parsed.key, str(content.get("sha")),
                                    content.get("size"), access, data)
        if parsed.kind == "discussion" and self.settings.discussions:
            node = await api.discussion(repo, int(parsed.key))
            return discussion_document(repo, node, access) if node else None
        if parsed.kind == "wiki":
            data = (await self._wiki(api, repo)).get(parsed.key)
            return wiki_document(repo, parsed.key, data, access) if data is not None else None
        if parsed.kind == "issue" and self.settings.issues:
            issue = await api.issue(repo, int(parsed.key))
            return issue_document(repo, issue, await api.comments(repo, issue),
                                  access) if issue else None
        return None


def build(source: SourceConfig, settings: GitHubSettings) -> GitHubConnector:
    if not settings.repos and not settings.org:
        raise ConfigError(f"source {source.name} names no repositories", user_message=(
            f"Source '{source.name}' is github but sets neither `github.repos` nor "
            "`github.org`."))
    bad = [r for r in settings.repos if r.count("/") != 1]
    if bad:
        raise ConfigError(f"source {source.name}: bad repos {bad}", user_message=f"Source "
                          f"'{source.name}': `github.repos` has {', '.join(bad)}, not "
                          "owner/name.")
    if not settings.app_id:
        if not source.token:
            raise ConfigError(f"source {source.name} has no token", user_message=f"Source "
                              f"'{source.name}' is github but has no `token` (a fine-grained "
                              "token) and no `github.app_id`.")
        return GitHubConnector(source, settings)
    if not settings.installation_id or settings.private_key_file is None:
        raise ConfigError(f"source {source.name}: app settings incomplete", user_message=(
            f"Source '{source.name}' sets `github.app_id` but not both `github.installation_id`"
            " and `github.private_key_file`."))
    return GitHubConnector(source, settings, read_key(settings.private_key_file, source.name))


def push(source: SourceConfig, settings: GitHubSettings) -> GitHubReceiver:
    return GitHubReceiver(settings.webhook_secret, Selection(settings.paths, settings.extensions),
                          discussions=settings.discussions, issues=settings.issues,
                          wiki=settings.wiki)


SPEC = ConnectorSpec("github", GitHubSettings, build, "GitHub repositories' documentation, "
                     "Discussions and issues", push=push)
