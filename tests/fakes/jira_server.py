"""A fake Jira (Cloud REST v3 or Data Center v2), its payloads shaped as Atlassian documents
them, and the admin webhook calls Jira Cloud sends (signed `X-Hub-Signature: sha256=<hex>`).

The JQL it understands is the part Sift sends: `project = "X"` / `project in (X, Y)` (any
number, ORed), `issuekey = K`, `status = S`, `updated >= -Nm`, `ORDER BY updated ASC`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from tests.fakes.http import LocalServer
from tests.fakes.platform_server import Fault

EMAIL, TOKEN, PAT = "sync@acme.example", "jira-api-token-3", "jira-dc-pat-5"
WEBHOOK_SECRET = "jira-admin-webhook-secret-4c1f"
ACCOUNT = {"accountId": "5b10a2844c20165700ede21g", "accountType": "atlassian",
           "active": True, "displayName": "Mia Krystof", "timeZone": "Europe/London"}


def adf(*paragraphs: str) -> dict[str, Any]:
    """A description or comment in Atlassian Document Format: one paragraph per string."""
    return {"type": "doc", "version": 1, "content": [
        {"type": "paragraph", "content": [{"type": "text", "text": p}]} for p in paragraphs]}


@dataclass
class FakeComment:
    body: Any  # ADF on Cloud, wiki markup on Data Center
    author: str = "Mia Krystof"
    visibility: dict[str, str] | None = None  # {"type": "role", "value": "Administrators"}
    rendered: str | None = None  # Data Center: the HTML Jira renders (None: rendered here)


@dataclass
class FakeIssue:
    key: str
    summary: str
    description: Any
    status: str = "Done"
    labels: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    comments: list[FakeComment] = field(default_factory=list)
    security: str | None = None  # a security level's id
    rendered: str | None = None  # Data Center: the description's HTML (None: rendered here)
    updated: datetime | None = None  # None: a time in January 2026, one minute per number

    @property
    def project(self) -> str:
        return self.key.rpartition("-")[0]


def render(markup: Any) -> Any:
    """Jira's renderer for the few wiki markup forms the tests write: headings, `*` lists,
    *bold*, {{monospace}}, paragraphs; the HTML has the shapes Jira's renderer gives them."""
    if not isinstance(markup, str):
        return None
    def inline(text: str) -> str:
        text = re.sub(r"\{\{(.+?)\}\}", r"<tt>\1</tt>", text)
        return re.sub(r"\*([^*\n]+)\*", r"<b>\1</b>", text)

    html = []
    for block in markup.split("\n\n"):
        if heading := re.match(r"h([1-6])\. (.*)", block):
            level, text = heading.groups()
            html.append(f'<h{level}><a name="{text.replace(" ", "")}"></a>{inline(text)}'
                        f'</h{level}>')
        elif block.startswith("* "):
            items = "".join(f"\n\t<li>{inline(line[2:])}</li>" for line in block.split("\n"))
            html.append(f'<ul class="alternate" type="square">{items}\n</ul>')
        else:
            html.append(f"<p>{inline(block)}</p>")
    return "\n\n".join(html)


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def grant(holder_type: str, parameter: str = "", permission: str = "BROWSE_PROJECTS",
          role: str = "") -> dict[str, Any]:
    """One permission grant as `permissionscheme?expand=permissions,projectRole` shows it."""
    holder: dict[str, Any] = {"type": holder_type}
    if parameter:
        holder |= {"parameter": parameter, "value": parameter, "expand": holder_type}
    if role:
        holder["projectRole"] = {"name": role, "id": int(parameter), "description": role}
    return {"id": 10000 + len(parameter), "holder": holder, "permission": permission}


class FakeJira(LocalServer):
    def __init__(self, deployment: str = "cloud", page_size: int = 100,
                 embedded_comments: int = 20) -> None:
        super().__init__()
        self.cloud = deployment == "cloud"
        self.version = "3" if self.cloud else "2"
        self.page_size = page_size
        self.embedded_comments = embedded_comments
        self.issues: dict[str, FakeIssue] = {}
        self.schemes: dict[str, list[dict[str, Any]]] = {}  # project -> grants
        self.projects: set[str] = set()
        self.faults: deque[Fault] = deque()
        self.requests: list[str] = []
        r, root = self.app.router, f"/rest/api/{self.version}"
        r.add_get(f"{root}/search/jql" if self.cloud else f"{root}/search", self._search)
        r.add_get(f"{root}/issue/{{key}}", self._issue)
        r.add_get(f"{root}/issue/{{key}}/comment", self._comments)
        r.add_get(f"{root}/project/{{key}}/permissionscheme", self._scheme)

    def put(self, issue: FakeIssue) -> None:
        if issue.updated is None:
            number = int(issue.key.rpartition("-")[2])
            issue.updated = datetime(2026, 1, 5, 9, 0, tzinfo=UTC) + timedelta(minutes=number)
        self.projects.add(issue.project)
        self.issues[issue.key] = issue

    def change(self, key: str, **changes: Any) -> None:
        issue = self.issues[key]
        for name, value in changes.items():
            setattr(issue, name, value)
        issue.updated = datetime.now(UTC)

    def reads(self, key: str) -> int:
        return sum(1 for r in self.requests if f"/issue/{key}" in r)

    def _gate(self, request: web.Request) -> web.Response | None:
        self.requests.append(request.path_qs)
        pair = base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
        wanted = f"Basic {pair}" if self.cloud else f"Bearer {PAT}"
        if request.headers.get("Authorization") != wanted:
            return web.json_response({"errorMessages": ["You are not authenticated."],
                                      "errors": {}}, status=401)
        for fault in list(self.faults):
            if request.path.startswith(fault.path):
                self.faults.remove(fault)
                return web.Response(status=fault.status, text=fault.body, headers=fault.headers,
                                    content_type="application/json")
        return None

    def _comment(self, issue: FakeIssue, i: int, comment: FakeComment) -> dict[str, Any]:
        assert issue.updated is not None
        author = {**ACCOUNT, "displayName": comment.author}
        body = {"self": f"{self.url}/rest/api/{self.version}/issue/{issue.key}/comment/{i}",
                "id": str(10000 + i), "author": author, "body": comment.body,
                "updateAuthor": author, "created": _stamp(issue.updated),
                "updated": _stamp(issue.updated), "jsdPublic": True}
        if comment.visibility:
            body["visibility"] = {**comment.visibility, "identifier": comment.visibility["value"]}
        return body

    def _rendered_comment(self, comment: FakeComment) -> Any:
        return comment.rendered if comment.rendered is not None else render(comment.body)

    def _json(self, issue: FakeIssue, fields: str, expand: str = "") -> dict[str, Any]:
        assert issue.updated is not None
        number = issue.key.rpartition("-")[2]
        base = {"expand": "renderedFields,names,schema,operations,editmeta,changelog,"
                "versionedRepresentations", "id": str(10000 + int(number)),
                "self": f"{self.url}/rest/api/{self.version}/issue/{10000 + int(number)}",
                "key": issue.key}
        if fields == "id":
            return base
        comments = [self._comment(issue, i, c) for i, c in enumerate(issue.comments)]
        security = ({"self": f"{self.url}/rest/api/{self.version}/securitylevel/"
                     f"{issue.security}", "id": issue.security, "name": "Staff only",
                     "description": "Only staff can see this issue."}
                    if issue.security else None)
        found: dict[str, Any] = {}
        if not self.cloud and "renderedFields" in expand:
            found["renderedFields"] = {
                "description": issue.rendered if issue.rendered is not None else render(
                    issue.description),
                "comment": {"comments": [{**c, "body": self._rendered_comment(raw)} for c, raw
                                         in zip(comments, issue.comments, strict=True)
                                         ][:self.embedded_comments]}}
        return base | found | {"fields": {
            "summary": issue.summary, "description": issue.description,
            "status": {"name": issue.status, "id": "10001",
                       "statusCategory": {"key": "done", "name": "Done"}},
            "labels": list(issue.labels),
            "components": [{"id": str(10000 + i), "name": n, "self": f"{self.url}/c/{i}"}
                           for i, n in enumerate(issue.components)],
            "updated": _stamp(issue.updated), "created": "2025-12-01T08:00:00.000+0000",
            "security": security, "issuetype": {"name": "Task", "subtask": False},
            "project": {"key": issue.project, "id": "10000", "name": issue.project,
                        "projectTypeKey": "software"},
            "reporter": ACCOUNT,
            "comment": {"comments": comments[:self.embedded_comments], "self": "",
                        "maxResults": self.embedded_comments, "total": len(comments),
                        "startAt": 0}}}

    def _match(self, jql: str) -> list[FakeIssue] | str:
        projects = set(re.findall(r'project = "?([A-Z0-9_]+)"?', jql))
        for listed in re.findall(r"project in \(([^)]*)\)", jql):
            projects |= {p.strip(' "') for p in listed.split(",")}
        for project in sorted(projects - self.projects):
            return f"The value '{project}' does not exist for the field 'project'."
        rows = [i for i in self.issues.values() if not projects or i.project in projects]
        if found := re.search(r"issuekey = ([A-Z0-9_]+-\d+)", jql):
            rows = [i for i in rows if i.key == found.group(1)]
        if found := re.search(r"status = \"?(\w+)\"?", jql):
            rows = [i for i in rows if i.status == found.group(1)]
        if found := re.search(r"updated >= -(\d+)m", jql):
            cutoff = datetime.now(UTC) - timedelta(minutes=int(found.group(1)))
            rows = [i for i in rows if i.updated and i.updated >= cutoff]
        return sorted(rows, key=lambda i: (i.updated or datetime.min, i.key))

    async def _search(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        q = request.query
        rows = self._match(q["jql"])
        if isinstance(rows, str):
            return web.json_response({"errorMessages": [rows], "errors": {}}, status=400)
        cap = 5000 if q.get("fields") == "id" else self.page_size
        size = min(int(q.get("maxResults", "50")), cap)
        if self.cloud:
            token = q.get("nextPageToken", "")
            start = int(base64.b64decode(token)) if token else 0
        else:
            start = int(q.get("startAt", "0"))
        page = [self._json(i, q.get("fields", ""), q.get("expand", ""))
                for i in rows[start:start + size]]
        more = start + size < len(rows)
        if self.cloud:
            body: dict[str, Any] = {"issues": page, "isLast": not more}
            if more:
                body["nextPageToken"] = base64.b64encode(str(start + size).encode()).decode()
        else:
            body = {"expand": "schema,names", "startAt": start, "maxResults": size,
                    "total": len(rows), "issues": page}
        return web.json_response(body)

    async def _issue(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        issue = self.issues.get(request.match_info["key"])
        if issue is None:
            return web.json_response({"errorMessages": [
                "Issue does not exist or you do not have permission to see it."],
                "errors": {}}, status=404)
        return web.json_response(self._json(issue, "", request.query.get("expand", "")))

    async def _comments(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        issue = self.issues[request.match_info["key"]]
        start, size = int(request.query.get("startAt", "0")), min(
            int(request.query.get("maxResults", "50")), 100)
        rows = [self._comment(issue, i, c) for i, c in enumerate(issue.comments)]
        if not self.cloud and request.query.get("expand") == "renderedBody":
            rows = [{**r, "renderedBody": self._rendered_comment(c)}
                    for r, c in zip(rows, issue.comments, strict=True)]
        return web.json_response({"startAt": start, "maxResults": size, "total": len(rows),
                                  "comments": rows[start:start + size]})

    async def _scheme(self, request: web.Request) -> web.Response:
        if (refused := self._gate(request)) is not None:
            return refused
        project = request.match_info["key"]
        if project not in self.schemes:
            return web.json_response({"errorMessages": [
                "You don't have permission to view the permission scheme."], "errors": {}},
                status=403)
        return web.json_response({
            "expand": "permissions,user,group,projectRole,field,all", "id": 10000,
            "self": f"{self.url}/rest/api/{self.version}/permissionscheme/10000",
            "name": f"{project} permission scheme", "description": "",
            "permissions": self.schemes[project]})


def issue_event(event: str, key: str, when: datetime | None = None) -> bytes:
    """An admin webhook's body, as Jira's webhook documentation shows it."""
    stamp = int((when or datetime.now(UTC)).timestamp() * 1000)
    number = int(key.rpartition("-")[2])
    return json.dumps({
        "timestamp": stamp, "webhookEvent": event, "issue_event_type_name": "issue_generic",
        "user": {"accountId": ACCOUNT["accountId"], "displayName": ACCOUNT["displayName"]},
        "issue": {"id": str(10000 + number), "key": key,
                  "self": f"https://acme.atlassian.net/rest/api/2/{10000 + number}",
                  "fields": {"summary": "(as it was)"}},
        "changelog": {"id": "10100", "items": [{"field": "status", "fieldtype": "jira",
                                                "from": "10000", "fromString": "To Do",
                                                "to": "10001", "toString": "Done"}]},
    }).encode()


def hub_signed(body: bytes, secret: str = WEBHOOK_SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature": f"sha256={digest}", "Content-Type": "application/json",
            "X-Atlassian-Webhook-Identifier": "1"}
