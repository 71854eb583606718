"""What GitHub sends and shows beside the fake: issues and comments as the REST API shows them,
webhook deliveries (push, discussion) signed as GitHub signs them."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

WEBHOOK_SECRET = "github-webhook-secret-9d2e"


def issue(number: int, title: str, body: str, url: str, comments: int = 0,
          state: str = "closed", labels: tuple[str, ...] = (),
          updated: str = "2026-01-05T09:00:00Z") -> dict[str, Any]:
    """An issue as GET /repos/{owner}/{repo}/issues/{number} shows it."""
    return {"id": 1000 + number, "node_id": f"I_kwDO{number}", "number": number,
            "title": title, "body": body, "state": state, "html_url": f"{url}/issues/{number}",
            "user": {"login": "octocat", "id": 1, "type": "User"},
            "labels": [{"id": i, "name": n, "color": "f29513"} for i, n in enumerate(labels)],
            "comments": comments, "created_at": "2025-12-01T08:00:00Z", "updated_at": updated,
            "closed_at": None, "author_association": "MEMBER", "locked": False}


def comment(body: str, login: str = "hubot") -> dict[str, Any]:
    return {"id": abs(hash(body)) % 10**8, "body": body, "user": {"login": login, "id": 2},
            "created_at": "2025-12-02T08:00:00Z", "updated_at": "2025-12-02T08:00:00Z",
            "author_association": "MEMBER"}


def webhook(event: str, payload: dict[str, Any], secret: str = WEBHOOK_SECRET
            ) -> tuple[bytes, dict[str, str]]:
    """A webhook delivery: its body and the headers GitHub sends with it."""
    body = json.dumps(payload).encode()
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {"X-GitHub-Event": event, "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab",
                  "X-Hub-Signature-256": f"sha256={digest}",
                  "User-Agent": "GitHub-Hookshot/044aadd", "Content-Type": "application/json"}


def push_payload(repo: str, added: Sequence[str] = (), modified: Sequence[str] = (),
                 removed: Sequence[str] = ()) -> dict[str, Any]:
    return {"ref": "refs/heads/main", "before": "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
            "after": "0000000000000000000000000000000000000001", "created": False,
            "deleted": False, "forced": False, "repository": {
                "full_name": repo, "default_branch": "main", "private": False},
            "commits": [{"id": "0000000000000000000000000000000000000001",
                         "message": "docs", "added": list(added), "removed": list(removed),
                         "modified": list(modified)}],
            "pusher": {"name": "octocat"}}


def discussion_payload(repo: str, number: int, action: str = "edited") -> dict[str, Any]:
    return {"action": action, "discussion": {"number": number, "title": "(as it was)",
                                             "node_id": f"D_kwDO{number}"},
            "repository": {"full_name": repo, "default_branch": "main"}}
