"""GitHub webhooks: `X-Hub-Signature-256` (sha256=HMAC of the body); push, discussion,
issues and gollum events name what changed."""

from __future__ import annotations

import json
from typing import Any

from pydantic import SecretStr

from sync.connectors.github_docs import Selection, discussion_id, file_id, issue_id
from sync.push import PushRejected, PushReply, PushRequest, check_hex, hmac_sha256, require_secret

SIGNATURE = "X-Hub-Signature-256"
EVENT = "X-GitHub-Event"


class GitHubReceiver:
    """A repository or organisation webhook (content type application/json) with a secret.
    GitHub signs no timestamp: a replayed call can only make Sift read the named items again,
    as they are now."""

    def __init__(self, secret: SecretStr | None, selection: Selection, *, discussions: bool,
                 issues: bool, wiki: bool = False) -> None:
        self._secret = secret
        self._selection = selection
        self._discussions = discussions
        self._issues = issues
        self._wiki = wiki

    def receive(self, request: PushRequest) -> PushReply:
        secret = require_secret(self._secret.get_secret_value() if self._secret else None,
                                "github.webhook_secret")
        check_hex(hmac_sha256(secret, request.body), request.header(SIGNATURE), SIGNATURE)
        try:
            event = json.loads(request.body)
        except ValueError:
            raise PushRejected("the signed body is not JSON") from None
        given = event.get("repository") if isinstance(event, dict) else None
        repo: dict[str, Any] = given if isinstance(given, dict) else {}
        name = str(repo.get("full_name") or "")
        kind = request.header(EVENT)
        if kind == "ping" or not name:
            return PushReply(202, "Ignored: nothing to sync.")
        if kind == "push":
            return self._push(event, name, str(repo.get("default_branch") or ""))
        if kind in ("discussion", "discussion_comment") and self._discussions:
            number = _number(event, "discussion")
            return _one(discussion_id(name, number)) if number else _unnamed(kind)
        if kind in ("issues", "issue_comment") and self._issues:
            issue = event.get("issue")
            if isinstance(issue, dict) and "pull_request" in issue:
                return PushReply(202, "Ignored: a pull request.")
            number = _number(event, "issue")
            return _one(issue_id(name, number)) if number else _unnamed(kind)
        if kind == "gollum":  # page names, not files: the next run clones the wiki again
            return (PushReply(202, "Queued.", resync=True) if self._wiki
                    else PushReply(202, "Ignored: the source does not read wikis."))
        return PushReply(202, f"Ignored: a {kind or 'nameless'} event.")

    def _push(self, event: dict[str, Any], repo: str, branch: str) -> PushReply:
        if event.get("ref") != f"refs/heads/{branch}":
            return PushReply(202, "Ignored: not the default branch.")
        commits = event.get("commits")
        if not isinstance(commits, list) or (not commits and not event.get("deleted")):
            return PushReply(202, "Queued.", resync=True)  # a push too large to list
        paths = [p for c in commits if isinstance(c, dict)
                 for key in ("added", "modified", "removed") for p in c.get(key) or ()]
        ids = tuple(dict.fromkeys(file_id(repo, str(p)) for p in paths
                                  if self._selection.matches(str(p))))
        return PushReply(202, "Queued.", doc_ids=ids) if ids else PushReply(
            202, "Ignored: no documentation file changed.")


def _number(event: dict[str, Any], key: str) -> int | None:
    item = event.get(key)
    number = item.get("number") if isinstance(item, dict) else None
    return number if isinstance(number, int) and number > 0 else None


def _unnamed(kind: str) -> PushReply:
    return PushReply(400, f"The {kind} event names no number.")


def _one(doc_id: str) -> PushReply:
    return PushReply(202, "Queued.", doc_ids=(doc_id,))
