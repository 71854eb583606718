"""Jira admin webhooks: `X-Hub-Signature` (sha256=HMAC of the body), the body's timestamp."""

from __future__ import annotations

import time

from pydantic import SecretStr

from sync.push import HUB_SIGNATURE as SIGNATURE
from sync.push import Clock, PushReply, PushRequest, hub_signed_event

# Issue events, and comment events (a comment is part of its issue's document).
EVENTS = ("jira:issue_created", "jira:issue_updated", "jira:issue_deleted", "comment_created",
          "comment_updated", "comment_deleted")


class JiraReceiver:
    """A webhook made in Jira settings > System > WebHooks with a secret: Jira Cloud then signs
    each call's body with HMAC-SHA256 (WebSub style, `sha256=<hex>`). Webhooks that apps
    register are not signed this way, and are refused."""

    def __init__(self, secret: SecretStr | None, tolerance_s: float,
                 clock: Clock = time.time) -> None:
        self._secret = secret
        self._tolerance_s = tolerance_s
        self._clock = clock

    def receive(self, request: PushRequest) -> PushReply:
        secret = self._secret.get_secret_value() if self._secret else None
        event = hub_signed_event(request, secret, "jira.webhook_secret", self._tolerance_s,
                                 self._clock)
        if event.get("webhookEvent") not in EVENTS:
            return PushReply(202, "Ignored: not an issue or comment change.")
        issue = event.get("issue")
        key = issue.get("key") if isinstance(issue, dict) else None
        if not isinstance(key, str) or not key:
            return PushReply(400, "The issue event names no issue key.")
        return PushReply(202, "Queued.", doc_ids=(key,)).once(request.header(SIGNATURE),
                                                              self._tolerance_s)
