"""Zendesk webhooks: base64 HMAC-SHA256 of timestamp + body; article events name the article."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from pydantic import SecretStr

from sync.push import (
    Clock,
    PushRejected,
    PushReply,
    PushRequest,
    check_base64,
    check_fresh,
    hmac_sha256,
    json_body,
    require_secret,
)

SIGNATURE = "X-Zendesk-Webhook-Signature"
TIMESTAMP = "X-Zendesk-Webhook-Signature-Timestamp"
ARTICLE_EVENT = "zen:event-type:article."
# Article events that leave the article's text, visibility and place as they were.
NOT_CONTENT = ("vote_", "comment_", "subscription_")


class ZendeskReceiver:
    """A webhook subscribed to Help Center article events (Admin Center > Webhooks)."""

    def __init__(self, secret: SecretStr | None, tolerance_s: float,
                 clock: Clock = time.time) -> None:
        self._secret = secret
        self._tolerance_s = tolerance_s
        self._clock = clock

    def receive(self, request: PushRequest) -> PushReply:
        secret = require_secret(self._secret.get_secret_value() if self._secret else None,
                                "zendesk.webhook_secret")
        stamp = request.header(TIMESTAMP).strip()
        if not stamp:
            raise PushRejected(f"no {TIMESTAMP} header")
        check_base64(hmac_sha256(secret, stamp.encode() + request.body),
                     request.header(SIGNATURE), SIGNATURE)
        check_fresh(_epoch(stamp), self._tolerance_s, self._clock)
        event = json_body(request.body)
        kind = str(event.get("type") or "") if isinstance(event, dict) else ""
        if not kind.startswith(ARTICLE_EVENT) or kind[len(ARTICLE_EVENT):].startswith(
                NOT_CONTENT):
            return PushReply(202, "Ignored: not an article change.")
        detail = event.get("detail")
        article = str(detail.get("id") or "") if isinstance(detail, dict) else ""
        if not article.isdigit():
            return PushReply(400, "The article event has no detail.id.")
        return PushReply(202, "Queued.", doc_ids=(article,)).once(request.header(SIGNATURE),
                                                                  self._tolerance_s)


def _epoch(stamp: str) -> float:
    """The signed timestamp: ISO 8601 as Zendesk sends it (epoch seconds also read)."""
    try:
        if stamp.isdigit():
            return float(stamp)
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    except ValueError:
        raise PushRejected(f"the {TIMESTAMP} header is not a time") from None
