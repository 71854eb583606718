"""The generic signed webhook of `http` sources: Sift's own scheme, for any platform to send."""

from __future__ import annotations

import time

from pydantic import SecretStr

from sync.push import (
    Clock,
    PushRejected,
    PushReply,
    PushRequest,
    check_fresh,
    check_hex,
    hmac_sha256,
    json_body,
    require_secret,
)

SIGNATURE = "X-Sift-Signature"
TIMESTAMP = "X-Sift-Timestamp"
MAX_IDS = 1000  # more than this in one call: an incremental run is cheaper


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=` + hex HMAC-SHA256 of `<timestamp>.<body>` (what a sender computes too)."""
    return "sha256=" + hmac_sha256(secret, timestamp.encode() + b"." + body).hex()


class SignedWebhookReceiver:
    """POST `{"ids": ["42", …]}` with `X-Sift-Timestamp` (Unix seconds) and `X-Sift-Signature`;
    no ids (`{}`) means "something changed": an incremental run. Ids are synced by id when the
    source has `http.item_path`, else by an incremental run."""

    def __init__(self, secret: SecretStr | None, tolerance_s: float, by_id: bool,
                 clock: Clock = time.time) -> None:
        self._secret = secret
        self._tolerance_s = tolerance_s
        self._by_id = by_id
        self._clock = clock

    def receive(self, request: PushRequest) -> PushReply:
        secret = require_secret(self._secret.get_secret_value() if self._secret else None,
                                "http.webhook_secret")
        stamp = request.header(TIMESTAMP).strip()
        if not stamp.isdigit():
            raise PushRejected(f"no {TIMESTAMP} header of Unix seconds")
        check_hex(hmac_sha256(secret, stamp.encode() + b"." + request.body),
                  request.header(SIGNATURE), SIGNATURE)
        check_fresh(float(stamp), self._tolerance_s, self._clock)
        payload = json_body(request.body)
        ids = payload.get("ids") if isinstance(payload, dict) else None
        if ids is None or ids == []:
            reply = PushReply(202, "Queued: an incremental sync.", resync=True)
        elif not isinstance(ids, list) or not all(isinstance(i, str | int) for i in ids):
            return PushReply(400, 'The body\'s "ids" must be a list of strings.')
        elif len(ids) > MAX_IDS or not self._by_id:
            reply = PushReply(202, "Queued: an incremental sync.", resync=True)
        else:
            reply = PushReply(202, "Queued.", doc_ids=tuple(dict.fromkeys(str(i) for i in ids)))
        return reply.once(request.header(SIGNATURE), self._tolerance_s)
