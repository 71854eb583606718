"""Jira reads: JQL search (Cloud's nextPageToken, Data Center's startAt), an issue, comments,
a project's permission scheme."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from rag.errors import SyncError
from sync.connectors.common.http_client import JsonClient, decode_json

FIELDS = ("summary,description,comment,status,labels,components,updated,created,security,"
          "project,reporter,issuetype")
REFUSED = frozenset({400})  # a JQL Jira will not run: its reason is the user's message
MISSING = frozenset({403, 404})


class JqlRefused(SyncError):
    """Jira would not run the query (a project that does not exist, a misspelt field)."""


class JiraApi:
    """One run's requests, in the deployment's own dialect: Cloud speaks REST v3 (ADF bodies,
    token-paged search), Data Center v2 (wiki markup, offset-paged search)."""

    def __init__(self, api: JsonClient, cloud: bool, page_size: int, label: str) -> None:
        self.api, self.cloud, self.page_size, self.label = api, cloud, page_size, label
        self.root = "rest/api/3" if cloud else "rest/api/2"

    async def search(self, jql: str, fields: str = FIELDS) -> AsyncIterator[dict[str, Any]]:
        """Every issue the query finds, page after page."""
        size = 1000 if fields == "id" else self.page_size  # ids alone come in larger pages
        token, start = "", 0
        while True:
            params: dict[str, Any] = {"jql": jql, "fields": fields, "maxResults": size,
                                      **self._rendered(fields)}
            if self.cloud:
                params |= {"nextPageToken": token} if token else {}
                url = f"{self.root}/search/jql"
            else:
                params["startAt"] = start
                url = f"{self.root}/search"
            body = self._checked(await self.api.get(url, params, accept=REFUSED), jql)
            issues = [i for i in body.get("issues") or () if isinstance(i, dict)]
            for issue in issues:
                yield issue
            if self.cloud:
                token = str(body.get("nextPageToken") or "")
                if body.get("isLast", not token) or not token:
                    return
            else:
                start += len(issues)
                if not issues or start >= int(body.get("total") or 0):
                    return

    def _rendered(self, fields: str) -> dict[str, str]:
        """Data Center: Jira's own HTML of the wiki markup beside it (its renderer is the
        markup's definition; the PyPI converters took seconds per issue)."""
        return {} if self.cloud or fields == "id" else {"expand": "renderedFields"}

    def _checked(self, response: httpx.Response, jql: str) -> dict[str, Any]:
        body = decode_json(response)
        if response.status_code in REFUSED:
            why = " ".join(str(m) for m in (body.get("errorMessages") or ())
                           if isinstance(body, dict)) or "HTTP 400"
            raise JqlRefused(f"JQL {jql!r} refused: {why}", user_message=f"{self.label} "
                             f"refused the query {jql!r}: {why}")
        if not isinstance(body, dict):
            raise SyncError(f"GET {response.url}: not a JSON object", user_message=f"{self.label}"
                            f" answered {response.url} with something other than a search "
                            "result.")
        return body

    async def issue(self, key: str) -> dict[str, Any] | None:
        """One issue with the search's fields; None when it was deleted (or is out of reach)."""
        response = await self.api.get(f"{self.root}/issue/{key}", {
            "fields": FIELDS, **self._rendered(FIELDS)}, accept=MISSING)
        found = None if response.status_code in MISSING else decode_json(response)
        return found if isinstance(found, dict) else None

    async def comments(self, issue: dict[str, Any]) -> list[Any]:
        """Every comment of the issue (the search embeds the first page only); on Data Center
        each with `renderedBody`, its HTML."""
        field = (issue.get("fields") or {}).get("comment")
        have = list(field.get("comments") or ()) if isinstance(field, dict) else []
        total = int(field.get("total") or 0) if isinstance(field, dict) else 0
        if not self.cloud:
            rendered = ((issue.get("renderedFields") or {}).get("comment") or {}).get(
                "comments") or ()
            html = {str(c.get("id")): c.get("body") for c in rendered if isinstance(c, dict)}
            have = [{**c, "renderedBody": html.get(str(c.get("id")))} if isinstance(c, dict)
                    else c for c in have]
        while len(have) < total:
            response = await self.api.get(f"{self.root}/issue/{issue['key']}/comment", {
                "startAt": len(have), "maxResults": 100,
                **({} if self.cloud else {"expand": "renderedBody"})})
            page = [c for c in decode_json(response).get("comments") or ()]
            if not page:
                break
            have += page
        return have

    async def grants(self, project: str) -> list[Any] | str:
        """The project's permission grants, or why they cannot be read (reading them takes
        the Administer Jira or Administer projects permission)."""
        response = await self.api.get(f"{self.root}/project/{project}/permissionscheme",
                                      {"expand": "permissions,projectRole"}, accept=MISSING)
        if response.status_code in MISSING:
            return f"HTTP {response.status_code}"
        body = decode_json(response)
        grants = body.get("permissions") if isinstance(body, dict) else None
        return grants if isinstance(grants, list) else "no permissions in the answer"
