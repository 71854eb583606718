"""Confluence Data Center webhooks: `X-Hub-Signature` (HMAC-SHA256 of the body, the secret)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import SecretStr

from sync.push import HUB_SIGNATURE as SIGNATURE
from sync.push import Clock, PushReply, PushRequest, hub_signed_event

CONTENT = ("page", "blog")  # page_updated, blog_removed, …: events about one piece of content


class ConfluenceReceiver:
    """A webhook made in Administration > General Configuration > Webhooks, with a secret.
    The body's own `timestamp` (milliseconds, signed with it) bounds replays."""

    def __init__(self, secret: SecretStr | None, tolerance_s: float,
                 clock: Clock = time.time) -> None:
        self._secret = secret
        self._tolerance_s = tolerance_s
        self._clock = clock

    def receive(self, request: PushRequest) -> PushReply:
        secret = self._secret.get_secret_value() if self._secret else None
        event = hub_signed_event(request, secret, "confluence.webhook_secret", self._tolerance_s,
                                 self._clock)
        name = str(event.get("event") or "")
        content = _content_id(event, name)
        if content is None:
            return PushReply(202, "Ignored: not a page or blog post change.")
        return PushReply(202, "Queued.", doc_ids=(content,)).once(request.header(SIGNATURE),
                                                                  self._tolerance_s)


def _content_id(event: dict[str, Any], name: str) -> str | None:
    kind = name.split("_", 1)[0]
    if kind not in CONTENT:
        return None
    body = event.get(kind)
    found = body.get("id") if isinstance(body, dict) else None
    return str(found) if isinstance(found, int) or (
        isinstance(found, str) and found.isdigit()) else None
