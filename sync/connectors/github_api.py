"""GitHub reads: REST for repositories, trees, blobs, commits, teams and issues; GraphQL for
Discussions (one query brings a page of questions with their accepted answers)."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from rag.errors import SyncError
from rag.http_retry import retry_after
from sync.connectors.common.http_client import JsonClient, decode_json

MISSING = frozenset({403, 404, 409, 410})  # 409: an empty repository has no tree
COMPARE_FILES_CAP = 300  # the compare API lists at most this many files


def throttled(response: httpx.Response) -> float | None:
    """GitHub's limits: a secondary limit says Retry-After; the primary one answers 403 or
    429 with x-ratelimit-remaining 0 and the epoch second it resets at."""
    if response.status_code not in (403, 429):
        return None
    hinted = retry_after(response.headers.get("retry-after"))
    if hinted is not None:
        return hinted
    if response.headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(response.headers["x-ratelimit-reset"]) - time.time()) + 1.0
        except (KeyError, ValueError):
            return 60.0
    return None


@dataclass(frozen=True)
class Repo:
    full_name: str
    branch: str
    visibility: str  # public, private or internal
    html_url: str
    has_discussions: bool = False
    has_wiki: bool = False
    has_issues: bool = False


DISCUSSION = """number title url body updatedAt createdAt author { login }
  category { name isAnswerable } labels(first: 20) { nodes { name } }
  answer { body author { login } }"""
DISCUSSIONS = """query($owner: String!, $name: String!, $cursor: String, $size: Int!) {
  repository(owner: $owner, name: $name) {
    discussions(first: $size, after: $cursor, orderBy: {field: UPDATED_AT, direction: DESC}) {
      pageInfo { hasNextPage endCursor }
      nodes { %s } } } }"""
ONE_DISCUSSION = """query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { discussion(number: $number) { %s } } }"""


class GitHubApi:
    def __init__(self, api: JsonClient, graphql_url: str, label: str, host: str,
                 token: Callable[[], Awaitable[str]]) -> None:
        self.api, self.graphql_url, self.label, self.host = api, graphql_url, label, host
        self.token = token  # the credential in use now (git needs it for wikis)

    async def _pages(self, url: str, params: dict[str, Any]) -> AsyncIterator[Any]:
        """A REST listing, following `Link: rel="next"` (on the API's own host only)."""
        while url:
            response = await self.api.get(url, params)
            for item in decode_json(response) or ():
                yield item
            follow = response.links.get("next", {}).get("url", "")
            if follow and httpx.URL(follow).host != self.host:
                raise SyncError(f"next link {follow} leaves {self.host}",
                                user_message=f"{self.label}"
                                " sent a next-page link to another host; not followed.")
            url, params = follow, {}

    async def repo(self, full_name: str) -> Repo | None:
        response = await self.api.get(f"repos/{full_name}", accept=MISSING)
        if response.status_code in MISSING:
            return None
        r = decode_json(response)
        return Repo(str(r["full_name"]), str(r.get("default_branch") or "main"),
                    str(r.get("visibility") or ("private" if r.get("private") else "public")),
                    str(r.get("html_url") or ""), bool(r.get("has_discussions")),
                    bool(r.get("has_wiki")), bool(r.get("has_issues")))

    async def org_repos(self, org: str) -> list[str]:
        return [str(r["full_name"]) async for r in self._pages(
            f"orgs/{org}/repos", {"type": "all", "per_page": 100}) if isinstance(r, dict)]

    async def tree(self, repo: Repo) -> list[dict[str, Any]]:
        response = await self.api.get(f"repos/{repo.full_name}/git/trees/{repo.branch}",
                                      {"recursive": "1"}, accept=MISSING)
        if response.status_code in MISSING:
            return []
        body = decode_json(response)
        return [e for e in body.get("tree") or () if isinstance(e, dict)
                and e.get("type") == "blob"]

    async def blob(self, repo: Repo, sha: str) -> bytes:
        body = decode_json(await self.api.get(f"repos/{repo.full_name}/git/blobs/{sha}"))
        return base64.b64decode(str(body.get("content") or ""))

    async def changed_files(self, repo: Repo, since: str) -> list[dict[str, Any]] | None:
        """Files changed on the default branch since then; None: too many, list them all."""
        commits = [c async for c in self._pages(f"repos/{repo.full_name}/commits", {
            "sha": repo.branch, "since": since, "per_page": 100})]
        if not commits:
            return []
        parents = commits[-1].get("parents") or ()
        if not parents:
            return None  # the first commit is new: everything is
        compare = decode_json(await self.api.get(
            f"repos/{repo.full_name}/compare/{parents[0]['sha']}...{repo.branch}"))
        files = [f for f in compare.get("files") or () if isinstance(f, dict)]
        return None if len(files) >= COMPARE_FILES_CAP else files

    async def content(self, repo: Repo, path: str) -> dict[str, Any] | None:
        response = await self.api.get(f"repos/{repo.full_name}/contents/{path}",
                                      {"ref": repo.branch}, accept=MISSING)
        found = None if response.status_code in MISSING else decode_json(response)
        return found if isinstance(found, dict) and found.get("type") == "file" else None

    async def readers(self, repo: Repo) -> tuple[list[str], list[str]] | str:
        """Team slugs and collaborator logins with read access, or why they cannot be read."""
        owner = repo.full_name.split("/")[0]
        teams = await self.api.get(f"repos/{repo.full_name}/teams", {"per_page": 100},
                                   accept=MISSING)
        people = await self.api.get(f"repos/{repo.full_name}/collaborators",
                                    {"affiliation": "direct", "per_page": 100}, accept=MISSING)
        for response in (teams, people):
            if response.status_code in MISSING:
                return f"HTTP {response.status_code} for {response.url.path}"
        return ([f"{owner}/{t['slug']}" for t in decode_json(teams) if t.get("slug")],
                [str(p["login"]) for p in decode_json(people) if p.get("login")])

    async def issues(self, repo: Repo, since: str | None) -> AsyncIterator[dict[str, Any]]:
        params = {"state": "all", "sort": "updated", "direction": "asc", "per_page": 100,
                  **({"since": since} if since else {})}
        async for item in self._pages(f"repos/{repo.full_name}/issues", params):
            if isinstance(item, dict) and "pull_request" not in item:
                yield item

    async def issue(self, repo: Repo, number: int) -> dict[str, Any] | None:
        response = await self.api.get(f"repos/{repo.full_name}/issues/{number}",
                                      accept=MISSING)
        found = None if response.status_code in MISSING else decode_json(response)
        return found if isinstance(found, dict) and "pull_request" not in found else None

    async def comments(self, repo: Repo, issue: dict[str, Any]) -> list[dict[str, Any]]:
        if not issue.get("comments"):
            return []
        return [c async for c in self._pages(
            f"repos/{repo.full_name}/issues/{issue['number']}/comments", {"per_page": 100})]

    async def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        response = await self.api.request("POST", self.graphql_url,
                                          json={"query": query, "variables": variables})
        body = decode_json(response)
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors and not body.get("data"):
            why = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict))
            raise SyncError(f"GraphQL: {why}", user_message=f"{self.label}: GraphQL refused "
                            f"the query ({why}).")
        data = body.get("data") if isinstance(body, dict) else None
        return data if isinstance(data, dict) else {}

    async def discussions(self, repo: Repo, size: int = 50) -> AsyncIterator[dict[str, Any]]:
        """Newest change first, with the accepted answer of each."""
        owner, name = repo.full_name.split("/")
        cursor: str | None = None
        while True:
            data = await self.graphql(DISCUSSIONS % DISCUSSION, {
                "owner": owner, "name": name, "cursor": cursor, "size": size})
            page = (data.get("repository") or {}).get("discussions") or {}
            for node in page.get("nodes") or ():
                if isinstance(node, dict):
                    yield node
            info = page.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                return
            cursor = info.get("endCursor")

    async def discussion(self, repo: Repo, number: int) -> dict[str, Any] | None:
        owner, name = repo.full_name.split("/")
        data = await self.graphql(ONE_DISCUSSION % DISCUSSION, {
            "owner": owner, "name": name, "number": number})
        found = (data.get("repository") or {}).get("discussion")
        return found if isinstance(found, dict) else None
