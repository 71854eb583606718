"""A fake GitHub: the REST endpoints and the GraphQL Discussions queries Sift uses, payloads
shaped as GitHub's REST and GraphQL references show them, rate-limit headers on every answer,
GitHub App installation tokens bought with an RS256 JWT, and signed webhook calls."""

from __future__ import annotations

import base64
import hashlib
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github_wiki import Wikis
from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

TOKEN = "github_pat_11ABCDEFG0sift0fine0grained0token"
APP_ID, INSTALLATION = "123456", 4242
ISO = "%Y-%m-%dT%H:%M:%SZ"


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's own object id


@dataclass
class Commit:
    sha: str
    date: datetime
    files: dict[str, bytes]  # the whole tree after this commit
    parent: str = ""


@dataclass
class FakeDiscussion:
    number: int
    title: str
    body: Any
    answer: str | None = None
    category: str = "Q&A"
    labels: list[str] = field(default_factory=list)
    updated: datetime = field(default_factory=lambda: datetime(2026, 1, 5, 9, tzinfo=UTC))


@dataclass
class FakeRepo:
    full_name: str
    visibility: str = "public"
    teams: list[str] | None = field(default_factory=list)  # None: listing them is refused
    collaborators: list[str] = field(default_factory=list)
    history: list[Commit] = field(default_factory=list)
    discussions: dict[int, FakeDiscussion] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # as GET issues/{n} shows
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def files(self) -> dict[str, bytes]:
        return self.history[-1].files if self.history else {}


class FakeGitHub(LocalServer):
    def __init__(self) -> None:
        super().__init__()
        self.repos: dict[str, FakeRepo] = {}
        self.orgs: dict[str, list[str]] = {}
        self.page_cap = 100  # GitHub's own per_page maximum; lower it to see Link paging
        self.faults: deque[Fault] = deque()
        self.requests: list[str] = []
        self.installation_tokens: list[str] = []
        self.revoked: set[str] = set()
        self.token_lifetime = 0  # requests an installation token serves before it expires
        self._uses: dict[str, int] = {}
        self.blobs: dict[str, bytes] = {}  # every version ever committed, by git object id
        self.wikis = Wikis()
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        r = self.app.router
        r.add_get("/repos/{owner}/{repo}", self._repo)
        r.add_get("/orgs/{org}/repos", self._org_repos)
        r.add_get("/repos/{owner}/{repo}/git/trees/{ref}", self._tree)
        r.add_get("/repos/{owner}/{repo}/git/blobs/{sha}", self._blob)
        r.add_get("/repos/{owner}/{repo}/commits", self._commits)
        r.add_get("/repos/{owner}/{repo}/compare/{spec}", self._compare)
        r.add_get("/repos/{owner}/{repo}/contents/{path:.+}", self._contents)
        r.add_get("/repos/{owner}/{repo}/teams", self._teams)
        r.add_get("/repos/{owner}/{repo}/collaborators", self._collaborators)
        r.add_get("/repos/{owner}/{repo}/issues", self._issues)
        r.add_get("/repos/{owner}/{repo}/issues/{number}", self._issue)
        r.add_get("/repos/{owner}/{repo}/issues/{number}/comments", self._comments)
        r.add_post("/graphql", self._graphql)
        r.add_post("/app/installations/{id}/access_tokens", self._access_token)
        r.add_route("*", r"/{owner}/{wiki:[^/]+\.wiki\.git}/{tail:.*}", self._wiki)

    async def stop(self) -> None:
        await super().stop()
        self.wikis.close()

    async def _wiki(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path_qs)
        live = {TOKEN, *self.installation_tokens} - self.revoked
        return await self.wikis.serve(request, live)

    # --- building repositories ----------------------------------------------------------------

    def repo(self, full_name: str, files: dict[str, str | bytes], **options: Any) -> FakeRepo:
        repo = FakeRepo(full_name, **options)
        self.repos[full_name] = repo
        self.commit(full_name, files, when=datetime(2026, 1, 1, tzinfo=UTC))
        return repo

    def commit(self, full_name: str, changes: dict[str, str | bytes | None],
               when: datetime | None = None) -> str:
        """A commit on the default branch: a path to new content, or to None (removed)."""
        repo = self.repos[full_name]
        files = dict(repo.files)
        for path, content in changes.items():
            if content is None:
                files.pop(path, None)
            else:
                files[path] = content.encode() if isinstance(content, str) else content
        self.blobs.update((blob_sha(d), d) for d in files.values())
        sha = hashlib.sha1(f"{full_name}{len(repo.history)}".encode()).hexdigest()
        parent = repo.history[-1].sha if repo.history else ""
        repo.history.append(Commit(sha, when or datetime.now(UTC), files, parent))
        return sha

    def private_key_file(self, folder: Path) -> Path:
        path = folder / "app.pem"
        path.write_bytes(self.key.private_bytes(serialization.Encoding.PEM,
                                                serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
        return path

    def reads(self, prefix: str) -> int:
        return sum(1 for r in self.requests if r.startswith(prefix))

    # --- the gate: credentials, faults, rate-limit headers ----------------------------------

    def _limits(self) -> dict[str, str]:
        reset = int((datetime.now(UTC) + timedelta(minutes=30)).timestamp())
        return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999",
                "x-ratelimit-used": "1", "x-ratelimit-reset": str(reset),
                "x-ratelimit-resource": "core"}

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self._uses[token] = self._uses.get(token, 0) + 1
        if token in self.installation_tokens and self.token_lifetime and \
                self._uses[token] > self.token_lifetime:
            self.revoked.add(token)  # expired, as an hour-old installation token is
        if token not in {TOKEN, *self.installation_tokens} or token in self.revoked:
            return web.json_response({"message": "Bad credentials", "documentation_url":
                                      "https://docs.github.com/rest", "status": "401"},
                                     status=401, headers=self._limits())
        for fault in list(self.faults):
            if request.path.startswith(fault.path):
                self.faults.remove(fault)
                return web.Response(status=fault.status, text=fault.body,
                                    headers=self._limits() | fault.headers,
                                    content_type="application/json")
        return None

    def _json(self, body: Any, status: int = 200, **headers: str) -> web.Response:
        return web.json_response(body, status=status, headers=self._limits() | headers)

    def _missing(self) -> web.Response:
        return self._json({"message": "Not Found", "documentation_url":
                           "https://docs.github.com/rest", "status": "404"}, 404)

    def _find(self, request: web.Request) -> FakeRepo | None:
        return self.repos.get(f"{request.match_info['owner']}/{request.match_info['repo']}")

    # --- REST -----------------------------------------------------------------------------

    def _repo_json(self, repo: FakeRepo) -> dict[str, Any]:
        owner, name = repo.full_name.split("/")
        return {"id": abs(hash(repo.full_name)) % 10**9, "node_id": "R_kgDO" + name,
                "name": name, "full_name": repo.full_name, "private": repo.visibility != "public",
                "visibility": repo.visibility, "owner": {"login": owner, "type": "Organization"},
                "html_url": f"{self.url}/{repo.full_name}", "default_branch": "main",
                "has_issues": True, "has_wiki": True, "has_discussions": bool(repo.discussions),
                "archived": False, "fork": False,
                "pushed_at": repo.history[-1].date.strftime(ISO)}

    async def _repo(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        return self._json(self._repo_json(repo)) if repo else self._missing()

    async def _org_repos(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        names = self.orgs.get(request.match_info["org"])
        if names is None:
            return self._missing()
        page = int(request.query.get("page", "1"))
        size = min(int(request.query.get("per_page", "30")), self.page_cap)
        rows = [self._repo_json(self.repos[n]) for n in names][(page - 1) * size:page * size]
        more = page * size < len(names)
        link = (f'<{self.url}{request.path}?type=all&per_page={size}&page={page + 1}>; '
                'rel="next"') if more else ""
        return self._json(rows, **({"Link": link} if link else {}))

    async def _tree(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        if repo is None:
            return self._missing()
        tree = [{"path": p, "mode": "100644", "type": "blob", "sha": blob_sha(d),
                 "size": len(d), "url": f"{self.url}/repos/{repo.full_name}/git/blobs/"
                 f"{blob_sha(d)}"} for p, d in sorted(repo.files.items())]
        return self._json({"sha": repo.history[-1].sha, "url": "", "tree": tree,
                           "truncated": False})

    async def _blob(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        wanted = request.match_info["sha"]
        data = self.blobs.get(wanted) if self._find(request) else None
        if data is None:
            return self._missing()
        return self._json({"sha": wanted, "node_id": "B_" + wanted[:8], "size": len(data),
                           "url": "", "encoding": "base64",
                           "content": base64.encodebytes(data).decode()})

    async def _commits(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        if repo is None:
            return self._missing()
        since = datetime.strptime(request.query["since"], ISO).replace(tzinfo=UTC)
        rows = [{"sha": c.sha, "commit": {"message": "edit", "committer": {
            "name": "Mona", "date": c.date.strftime(ISO)}},
            "parents": [{"sha": c.parent}] if c.parent else []}
            for c in reversed(repo.history) if c.date >= since]
        return self._json(rows)

    async def _compare(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        base, _, _head = request.match_info["spec"].partition("...")
        old = next((c.files for c in (repo.history if repo else []) if c.sha == base), None)
        if repo is None or old is None:
            return self._missing()
        new, files = repo.files, []
        for path in sorted(set(old) | set(new)):
            if old.get(path) == new.get(path):
                continue
            status = "removed" if path not in new else "added" if path not in old else "modified"
            data = new.get(path, old.get(path, b""))
            files.append({"sha": blob_sha(data), "filename": path, "status": status,
                          "additions": 1, "deletions": 0, "changes": 1})
        return self._json({"status": "ahead", "ahead_by": 1, "behind_by": 0,
                           "total_commits": 1, "commits": [], "files": files})

    async def _contents(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        path = request.match_info["path"]
        data = repo.files.get(path) if repo else None
        if repo is None or data is None:
            return self._missing()
        inline = len(data) <= 1_000_000  # larger files come without content
        return self._json({"type": "file", "encoding": "base64" if inline else "none",
                           "size": len(data), "name": path.rsplit("/", 1)[-1], "path": path,
                           "content": base64.encodebytes(data).decode() if inline else "",
                           "sha": blob_sha(data)})

    async def _teams(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        if repo is None or repo.teams is None:
            return self._json({"message": "Resource not accessible by personal access token",
                               "status": "403"}, 403)
        return self._json([{"id": i, "name": s.title(), "slug": s, "permission": "pull",
                            "privacy": "closed"} for i, s in enumerate(repo.teams)])

    async def _collaborators(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        if repo is None or repo.teams is None:
            return self._json({"message": "Must have push access to view repository "
                               "collaborators.", "status": "403"}, 403)
        return self._json([{"login": p, "id": i, "type": "User", "role_name": "read",
                            "permissions": {"pull": True, "push": False, "admin": False}}
                           for i, p in enumerate(repo.collaborators)])

    async def _issues(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        rows = sorted((repo.issues if repo else {}).values(), key=lambda i: i["updated_at"])
        if since := request.query.get("since"):
            rows = [i for i in rows if i["updated_at"] >= since]
        return self._json(rows)

    async def _issue(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        issue = (repo.issues if repo else {}).get(int(request.match_info["number"]))
        return self._json(issue) if issue else self._missing()

    async def _comments(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        repo = self._find(request)
        return self._json((repo.comments if repo else {}).get(int(request.match_info["number"]),
                                                              []))

    # --- GraphQL and App tokens ---------------------------------------------------------------

    def _node(self, repo: FakeRepo, d: FakeDiscussion) -> dict[str, Any]:
        return {"number": d.number, "title": d.title, "url": f"{self.url}/{repo.full_name}/"
                f"discussions/{d.number}", "body": d.body, "updatedAt": d.updated.strftime(ISO),
                "createdAt": "2025-12-01T08:00:00Z", "author": {"login": "octocat"},
                "category": {"name": d.category, "isAnswerable": d.category == "Q&A"},
                "labels": {"nodes": [{"name": n} for n in d.labels]},
                "answer": {"body": d.answer, "author": {"login": "hubot"}} if d.answer else None}

    async def _graphql(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        payload = await request.json()
        query, v = payload["query"], payload["variables"]
        repo = self.repos.get(f"{v['owner']}/{v['name']}")
        if repo is None:
            return self._json({"data": {"repository": None}, "errors": [{
                "type": "NOT_FOUND", "path": ["repository"], "locations": [{"line": 2,
                                                                             "column": 3}],
                "message": f"Could not resolve to a Repository with the name "
                f"'{v['owner']}/{v['name']}'."}]})
        if "discussion(number:" in query:
            found = repo.discussions.get(int(v["number"]))
            return self._json({"data": {"repository": {
                "discussion": self._node(repo, found) if found else None}}})
        rows = sorted(repo.discussions.values(), key=lambda d: d.updated, reverse=True)
        start = int(base64.b64decode(v["cursor"])) if v.get("cursor") else 0
        page = rows[start:start + int(v["size"])]
        end = start + len(page)
        return self._json({"data": {"repository": {"discussions": {
            "pageInfo": {"hasNextPage": end < len(rows),
                         "endCursor": base64.b64encode(str(end).encode()).decode()},
            "nodes": [self._node(repo, d) for d in page]}}}})

    async def _access_token(self, request: web.Request) -> web.Response:
        self.requests.append(request.path_qs)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        try:
            claims = jwt.decode(token, self.key.public_key(), algorithms=["RS256"])
        except jwt.PyJWTError as exc:
            return self._json({"message": f"A JSON web token could not be decoded ({exc})",
                               "status": "401"}, 401)
        if str(claims.get("iss")) != APP_ID or claims["exp"] - claims["iat"] > 600 or \
                int(request.match_info["id"]) != INSTALLATION:
            return self._json({"message": "Integration not found", "status": "404"}, 404)
        issued = f"ghs_{len(self.installation_tokens)}{'x' * 30}"
        self.installation_tokens.append(issued)
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime(ISO)
        return self._json({"token": issued, "expires_at": expires,
                           "permissions": {"contents": "read", "metadata": "read",
                                           "discussions": "read", "administration": "read"},
                           "repository_selection": "selected"}, 201)

